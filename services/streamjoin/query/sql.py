"""Parse SQL join queries (with CQL's window clauses) into the query JSON, with sqlglot.

What a Flink SQL or ksqlDB user writes, over registered streams::

    SELECT * FROM orders [RANGE 10 SECONDS] AS o
      JOIN payments [ROWS 50] AS p ON o.id = p.order_id
    WHERE (o.amount * 1.2 > p.total OR lower(o.user.tier) = 'gold') AND p.fee IS NULL

The window clauses are CQL's (`[RANGE n [unit] [STRICT]]`, `[ROWS n]`, `[PARTITION BY f ROWS n]`
after a stream, `WITHIN (a, b) n` after FROM, `SHED ...` at the end): they are read by the CQL
parser (`streamjoin.query.cql.parse_clause`) and blanked out (replaced by spaces, so every
position stays right) before sqlglot parses the rest (`streamjoin.query.sql_clauses`, which also
lets a registered stream be named like a SQL keyword). Flink's interval joins and ksqlDB's
`JOIN ... WITHIN` become `within` pairs (`streamjoin.query.sql_pairs`). The ON conditions and WHERE form one
conjunction: each term that compares a `stream.field` with another or with a number, string or
boolean becomes a `where` triple (its equalities between two inputs are the join graph); every other
term (OR, NOT, arithmetic, functions, BETWEEN, IN, IS NULL, nested paths, NULL literals) goes into
the query's `filter` expression (`streamjoin.query.expr`). Aliases name the inputs in the text
only: the query JSON names each input by its stream. Every problem raises `SqlError` with field
`sql` and the character position; a misspelt keyword is named with the one meant.

>>> streams = {"a": Stream("net.a", "ts"), "b": Stream("net.b", "ts")}
>>> q = parse_sql("SELECT * FROM a [RANGE 10 SECONDS] AS o JOIN b [ROWS 5] AS p ON o.k = p.k "
...               "WHERE o.n BETWEEN 1 AND 3", streams)
>>> q["inputs"][0]["window"], q["where"], q["filter"]
({'range': 10000}, [['a.k', '=', 'b.k']], {'op': 'between', 'args': [{'ref': ['a', 'n']}, 1, 3]})
>>> parse_sql("SELECT * FROM a AS o JOIN b AS p ON o.k = q.k", streams)
Traceback (most recent call last):
...
streamjoin.query.sql.SqlError: sql: unknown stream or alias 'q' at position 42 (line 1, column 43)
>>> try:
...     parse_sql("SELECT * FROM a o JION b p ON o.k = p.k", streams)
... except SqlError as exc:
...     exc.problem, exc.position
("unknown keyword 'JION' (did you mean JOIN?)", 18)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError

from streamjoin.query.cql import MAX_CQL_LENGTH, CqlStream, Stream
from streamjoin.query.cql_lex import CqlError
from streamjoin.query.errors import QueryError
from streamjoin.query.sql_clauses import Clauses, names_as_identifiers
from streamjoin.query.sql_terms import SqlTerms

__all__ = ["KEYWORDS", "SqlError", "Stream", "parse_sql"]

KEYWORDS = (
    "SELECT", "FROM", "JOIN", "INNER", "WHERE", "AND", "NOT", "BETWEEN", "NULL", "TRUE", "FALSE",
    "INTERVAL", "WITHIN", "SHED", "ON", "OR", "AS", "IN", "IS",
)  # fmt: skip
"""The SQL keywords the front end accepts (docs/queries.md, "SQL"): what a misspelt word is matched to."""


class SqlError(CqlError):
    """SQL text that cannot be accepted; `position` is the 0-based offset of the problem."""

    def __init__(self, text: str, position: int, message: str) -> None:
        super().__init__(text, position, message, field="sql")


def _parse_error_position(text: str, exc: ParseError) -> int:
    error = exc.errors[0] if exc.errors else {}
    line, col = error.get("line"), error.get("col")
    if not isinstance(line, int) or not isinstance(col, int):
        return len(text)
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    highlight = str(error.get("highlight") or "")
    return max(0, min(len(text), start + col - max(len(highlight), 1)))


def _distance(a: str, b: str) -> int:
    """Return the edit distance of `a` and `b`, a swap of two neighbours counting as one edit."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb)))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def _keyword_like(word: str) -> str | None:
    """Return the keyword `word` is a misspelling of (one edit; two for long ones), if any."""
    upper = word.upper()
    if len(upper) < 3 or upper in KEYWORDS:
        return None
    for keyword in KEYWORDS:
        if len(keyword) >= 3 and _distance(upper, keyword) <= (1 if len(keyword) <= 5 else 2):
            return keyword
    return None


def _misspelt(
    text: str, tokens: Sequence[Token], position: int, streams: Mapping[str, CqlStream]
) -> SqlError | None:
    """Return the error for the last misspelt keyword at or before `position` (where parsing failed)."""
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        if tok.start > position or tok.token_type != TokenType.VAR or tok.text in streams:
            continue
        before = tokens[i - 1].token_type if i else None
        after = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        if TokenType.DOT in (before, after) or after == TokenType.L_PAREN:
            continue  # a field path or a function: not a keyword's place
        keyword = _keyword_like(tok.text)
        if keyword is not None:
            return SqlError(text, tok.start, f"unknown keyword {tok.text!r} (did you mean {keyword}?)")
    return None


def _parse(text: str, sql: str, streams: Mapping[str, CqlStream]) -> exp.Expr:
    """Parse `sql` (the text with the clauses blanked) with sqlglot; raise `SqlError` at the problem."""
    tokens = names_as_identifiers(sqlglot.tokenize(sql), streams)
    first = tokens[0]
    if first.token_type != TokenType.SELECT:
        typo = _misspelt(text, tokens[:1], first.start, streams)
        raise typo or SqlError(text, first.start, f"expected SELECT, found {first.text!r}")
    try:
        tree = Dialect.get_or_raise(None).parser().parse(tokens, sql)[0]
    except ParseError as exc:
        position = _parse_error_position(text, exc)
        typo = _misspelt(text, tokens, position, streams)
        if typo is not None:
            raise typo from None
        message = str(exc.errors[0].get("description")) if exc.errors else str(exc)
        if message.startswith("Required keyword"):
            message = "incomplete expression"
        elif message.startswith("Invalid expression / Unexpected token"):
            at = next((t for t in tokens if t.start == position), None)
            message = f"unexpected {at.text!r}" if at is not None else "unexpected end of the text"
        raise SqlError(text, position, message.split("\n")[0]) from None
    if tree is None:
        raise SqlError(text, 0, "expected SELECT, found the end of the text")
    return tree


def parse_sql(text: str, streams: Mapping[str, CqlStream]) -> dict[str, Any]:
    """Return the `inputs`, `where`, `filter`, `select`, `within` and `shedding` of the query JSON.

    Args:
        text: the SQL text.
        streams: the registered streams by name; each input's topic and timestamp come from here.

    Raises:
        SqlError: the text does not parse, uses what the engine does not run, names an unknown
            stream, alias or function, or has a bad window.
    """
    if not isinstance(text, str):
        raise QueryError("sql", "must be a string")
    if len(text) > MAX_CQL_LENGTH:
        raise SqlError(text, MAX_CQL_LENGTH, f"the text is longer than {MAX_CQL_LENGTH} characters")
    clauses = Clauses(text, streams, SqlError)
    if not clauses.sql.strip():
        raise SqlError(text, 0, "expected SELECT, found the end of the text")
    try:
        tree = _parse(text, clauses.sql, streams)
        return SqlTerms(text, streams, SqlError).query(tree, clauses)
    except RecursionError:
        raise SqlError(text, 0, "the text nests too deeply") from None
