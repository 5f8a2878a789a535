"""Parse SQL join queries (with CQL's window clauses) into the query JSON, with sqlglot.

What a Flink SQL or ksqlDB user writes, over registered streams::

    SELECT * FROM orders [RANGE 10 SECONDS] AS o
      JOIN payments [ROWS 50] AS p ON o.id = p.order_id
    WHERE (o.amount * 1.2 > p.total OR lower(o.user.tier) = 'gold') AND p.fee IS NULL

The window clauses are CQL's (`[RANGE n [unit] [STRICT]]`, `[ROWS n]`, `[PARTITION BY f ROWS n]`
after a stream, `WITHIN (a, b) n` after FROM, `SHED ...` at the end): they are read by the CQL
parser (`streamjoin.query.cql.parse_clause`) and blanked out (replaced by spaces, so every
position stays right) before sqlglot parses the rest. The ON conditions and WHERE form one
conjunction: each term that compares a `stream.field` with another or with a number, string or
boolean becomes a `where` triple (its equalities between two inputs are the join graph); every other
term (OR, NOT, arithmetic, functions, BETWEEN, IN, IS NULL, nested paths, NULL literals) goes into
the query's `filter` expression (`streamjoin.query.expr`). Aliases name the inputs in the text
only: the query JSON names each input by its stream. Every problem raises `CqlError` with field
`sql` and the character position.

>>> streams = {"a": Stream("net.a", "ts"), "b": Stream("net.b", "ts")}
>>> q = parse_sql("SELECT * FROM a [RANGE 10 SECONDS] AS o JOIN b [ROWS 5] AS p ON o.k = p.k "
...               "WHERE o.n BETWEEN 1 AND 3", streams)
>>> q["inputs"][0]["window"], q["where"], q["filter"]
({'range': 10000}, [['a.k', '=', 'b.k']], {'op': 'between', 'args': [{'ref': ['a', 'n']}, 1, 3]})
>>> parse_sql("SELECT * FROM a AS o JOIN b AS p ON o.k = q.k", streams)
Traceback (most recent call last):
...
streamjoin.query.sql.SqlError: sql: unknown stream or alias 'q' at position 42 (line 1, column 43)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import Token, TokenType
from sqlglot.errors import ParseError, TokenError

from streamjoin.query.cql import MAX_CQL_LENGTH, CqlStream, Stream, parse_clause
from streamjoin.query.cql_lex import CqlError
from streamjoin.query.errors import QueryError
from streamjoin.query.sql_terms import SqlTerms

__all__ = ["SqlError", "Stream", "parse_sql"]

_MAX_DEPTH = 32  # parentheses, as in CQL


class SqlError(CqlError):
    """SQL text that cannot be accepted; `position` is the 0-based offset of the problem."""

    def __init__(self, text: str, position: int, message: str) -> None:
        super().__init__(text, position, message, field="sql")


def _blank(text: str, start: int, end: int) -> str:
    """Return `text` with [start, end) replaced by spaces (newlines kept)."""
    return text[:start] + "".join(c if c == "\n" else " " for c in text[start:end]) + text[end:]


def _only(text: str, start: int, end: int) -> str:
    """Return `text` with everything outside [start, end) blanked."""
    return _blank(_blank(text, end, len(text)), 0, start)


class _Clauses:
    """Find CQL's clauses in the token stream, read them, and blank them out of the text."""

    def __init__(self, text: str, streams: Mapping[str, CqlStream]) -> None:
        self.text = text
        self.sql = text
        self.streams = streams
        self.windows: dict[str, tuple[int, int]] = {}  # stream as written -> span of its [...] inside
        self.within: tuple[int, int] | None = None
        self.shed: tuple[int, int] | None = None
        try:
            tokens = sqlglot.tokenize(text)
        except TokenError:
            raise SqlError(text, _token_error_position(text), "unterminated string or quoted name") from None
        self._scan(tokens)

    def _scan(self, tokens: list[Token]) -> None:
        depth = 0
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            kind, word = tok.token_type, tok.text.upper()
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if kind == TokenType.L_BRACKET and i >= 2 and depth == 0 and self._after_stream(tokens, i):
                close = self._close(tokens, i)
                self.windows[tokens[i - 1].text] = (tok.end + 1, tokens[close].start)
                self.sql = _blank(self.sql, tok.start, tokens[close].end + 1)
                i = close + 1
                continue
            if depth == 0 and word == "WITHIN" and nxt is not None and nxt.token_type == TokenType.L_PAREN:
                end = self._clause_end(tokens, i + 1, ("WHERE", "SHED", ";"))
                self.within = (tok.end + 1, end)
                self.sql = _blank(self.sql, tok.start, end)
            elif depth == 0 and word == "SHED" and nxt is not None and nxt.text.upper() == "MEMORY":
                end = self._clause_end(tokens, i + 1, (";",))
                self.shed = (tok.end + 1, end)
                self.sql = _blank(self.sql, tok.start, end)
            depth += kind == TokenType.L_PAREN
            depth -= kind == TokenType.R_PAREN
            if depth > _MAX_DEPTH:
                raise SqlError(self.text, tok.start, f"parentheses nested deeper than {_MAX_DEPTH}")
            i += 1

    @staticmethod
    def _after_stream(tokens: list[Token], i: int) -> bool:
        name, before = tokens[i - 1], tokens[i - 2]
        return name.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and (
            before.token_type in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA)
        )

    def _close(self, tokens: list[Token], i: int) -> int:
        for j in range(i + 1, len(tokens)):
            if tokens[j].token_type == TokenType.R_BRACKET:
                return j
        raise SqlError(self.text, tokens[i].start, "'[' is not closed by ']'")

    def _clause_end(self, tokens: list[Token], i: int, stops: tuple[str, ...]) -> int:
        depth = 0
        for tok in tokens[i:]:
            depth += tok.token_type == TokenType.L_PAREN
            depth -= tok.token_type == TokenType.R_PAREN
            if depth == 0 and tok.text.upper() in stops:
                return int(tok.start)
        return len(self.text)

    def read(self, clause: str, span: tuple[int, int], names: list[str]) -> Any:
        try:
            return parse_clause(_only(self.text, *span), clause, self.streams, names)
        except CqlError as exc:
            raise SqlError(self.text, exc.position, exc.problem) from None


def _token_error_position(text: str) -> int:
    """Return where an unreadable text goes wrong: its unterminated quote, else its end."""
    for quote in ("'", '"'):
        if text.count(quote) % 2:
            return text.rfind(quote)
    return len(text)


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
    clauses = _Clauses(text, streams)
    if not clauses.sql.strip():
        raise SqlError(text, 0, "expected SELECT, found the end of the text")
    try:
        tree = sqlglot.parse_one(clauses.sql)
    except RecursionError:
        raise SqlError(text, 0, "the text nests too deeply") from None
    except ParseError as exc:
        message = str(exc.errors[0].get("description")) if exc.errors else str(exc)
        if message.startswith("Required keyword"):
            message = "incomplete expression"
        raise SqlError(text, _parse_error_position(text, exc), message.split("\n")[0]) from None
    try:
        return SqlTerms(text, streams, clauses.windows, SqlError).query(tree, clauses)
    except RecursionError:
        raise SqlError(text, 0, "the text nests too deeply") from None
