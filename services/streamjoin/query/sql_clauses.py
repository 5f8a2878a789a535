"""Read the clauses sqlglot does not know out of SQL text, and blank them out of it.

`streamjoin.query.sql` is the entry. CQL's clauses (`[window]` after a stream, `WITHIN (a, b) n`
after the inputs, `SHED ...` at the end) and ksqlDB's `JOIN s WITHIN n unit ON ...` are found in
sqlglot's token stream; each is replaced by spaces (newlines kept, so every position stays right)
before sqlglot parses the rest. A window is read at once, so a `]` that is missing is reported where
it was expected. Registered stream names that are SQL keywords (`temp`, `order`) become plain names
where a name stands (`names_as_identifiers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import Token, TokenType
from sqlglot.errors import TokenError

from streamjoin.query.cql import CqlStream, parse_clause
from streamjoin.query.cql_lex import CqlError, tokenize

__all__ = ["Clauses", "JoinWithin", "blank", "names_as_identifiers", "only"]

MAX_DEPTH = 32  # parentheses, as in CQL

_NAME_TYPES = (TokenType.VAR, TokenType.IDENTIFIER)
_BEFORE_NAME = (TokenType.FROM, TokenType.JOIN)

ErrorAt = Callable[[str, int, str], CqlError]
"""Build the error of a text at a position: `SqlError` (kept in `streamjoin.query.sql`)."""


def blank(text: str, start: int, end: int) -> str:
    """Return `text` with [start, end) replaced by spaces (newlines kept)."""
    return text[:start] + "".join(c if c == "\n" else " " for c in text[start:end]) + text[end:]


def only(text: str, start: int, end: int) -> str:
    """Return `text` with everything outside [start, end) blanked."""
    return blank(blank(text, end, len(text)), 0, start)


def names_as_identifiers(tokens: Sequence[Token], streams: Mapping[str, CqlStream]) -> list[Token]:
    """Return `tokens` with each registered stream name that sqlglot reads as a keyword made a name.

    A keyword is a name where a stream stands: after FROM or JOIN, after a comma in the FROM list,
    and before a `.` (`temp.id`). Elsewhere it stays a keyword (a stream named `join` is still
    joined with JOIN).
    """
    out: list[Token] = []
    in_from = False
    for i, tok in enumerate(tokens):
        prev = out[-1].token_type if out else None
        nxt = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        if prev in _BEFORE_NAME:
            in_from = True
        elif tok.token_type in (TokenType.ON, TokenType.WHERE):
            in_from = False
        listed = prev in _BEFORE_NAME or (prev == TokenType.COMMA and in_from)
        if (
            tok.text in streams
            and tok.token_type not in _NAME_TYPES
            and ((listed and nxt != TokenType.L_PAREN) or nxt == TokenType.DOT)
        ):
            tok = Token(TokenType.VAR, tok.text, tok.line, tok.col, tok.start, tok.end, tok.comments)
        out.append(tok)
    return out


def _token_error_position(text: str) -> int:
    """Return where an unreadable text goes wrong: its unterminated quote, else its end."""
    for quote in ("'", '"'):
        if text.count(quote) % 2:
            return text.rfind(quote)
    return len(text)


@dataclass(frozen=True, slots=True)
class JoinWithin:
    """ksqlDB's `JOIN s WITHIN ...`: which JOIN (0: the first), where its size is, where it starts."""

    join: int
    span: tuple[int, int]
    position: int


class Clauses:
    """The clauses of one SQL text, read, and the text sqlglot parses (`sql`: them blanked)."""

    def __init__(self, text: str, streams: Mapping[str, CqlStream], error: ErrorAt) -> None:
        self.text = text
        self.sql = text
        self.streams = streams
        self.error = error
        self.windows: dict[str, dict[str, Any]] = {}  # stream as written -> its window's JSON
        self.within: tuple[int, int] | None = None
        self.shed: tuple[int, int] | None = None
        self.join_within: list[JoinWithin] = []
        try:
            tokens = sqlglot.tokenize(text)
        except TokenError:
            raise error(text, _token_error_position(text), "unterminated string or quoted name") from None
        self._scan(names_as_identifiers(tokens, streams))

    def _scan(self, tokens: list[Token]) -> None:
        depth = joins = 0
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            kind, word = tok.token_type, tok.text.upper()
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if kind == TokenType.L_BRACKET and i >= 2 and depth == 0 and self._after_stream(tokens, i):
                i = self._window(tokens, i)
                continue
            joins += depth == 0 and kind == TokenType.JOIN
            if depth == 0 and word == "WITHIN" and nxt is not None and self._sized(tokens, i + 1):
                end = self._clause_end(tokens, i + 1, ("ON", "WHERE", "JOIN", "INNER", "SHED", ";"))
                self.join_within.append(JoinWithin(joins - 1, (tok.end + 1, end), tok.start))
                self.sql = blank(self.sql, tok.start, end)
            elif depth == 0 and word == "WITHIN" and nxt is not None and nxt.token_type == TokenType.L_PAREN:
                end = self._clause_end(tokens, i + 1, ("WHERE", "SHED", ";"))
                self.within = (tok.end + 1, end)
                self.sql = blank(self.sql, tok.start, end)
            elif depth == 0 and word == "SHED" and nxt is not None and nxt.text.upper() == "MEMORY":
                end = self._clause_end(tokens, i + 1, (";",))
                self.shed = (tok.end + 1, end)
                self.sql = blank(self.sql, tok.start, end)
            depth += kind == TokenType.L_PAREN
            depth -= kind == TokenType.R_PAREN
            if depth > MAX_DEPTH:
                raise self.error(self.text, tok.start, f"parentheses nested deeper than {MAX_DEPTH}")
            i += 1

    @staticmethod
    def _sized(tokens: list[Token], i: int) -> bool:
        """Return True when a size follows (`10 SECONDS`, `(10 SECONDS, ...)`): ksqlDB's WITHIN."""
        if tokens[i].token_type == TokenType.L_PAREN:
            i += 1
        return i < len(tokens) and tokens[i].token_type == TokenType.NUMBER

    @staticmethod
    def _after_stream(tokens: list[Token], i: int) -> bool:
        name, before = tokens[i - 1], tokens[i - 2]
        return name.token_type in _NAME_TYPES and (
            before.token_type in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA)
        )

    def _window(self, tokens: list[Token], i: int) -> int:
        """Read the window whose `[` is `tokens[i]`; return the index after its `]`.

        The window is read up to the first `]` (or the end): what follows a whole window there is
        reported as where the `]` was expected, not at a later stream's `]`.
        """
        close = next(
            (j for j in range(i + 1, len(tokens)) if tokens[j].token_type == TokenType.R_BRACKET), None
        )
        start, end = tokens[i].end + 1, tokens[close].start if close is not None else len(self.text)
        try:  # the CQL tokenizer stops at SQL it does not know (`+`): the window ends before it
            tokenize(only(self.text, start, end))
        except CqlError as exc:
            end = exc.position
        try:
            window = parse_clause(only(self.text, start, end), "window", self.streams, [], closer="]")
        except CqlError as exc:
            problem = exc.problem
            if exc.position == end < len(self.text) and problem.endswith("found the end of the text"):
                problem = problem.replace("the end of the text", repr(self.text[end]))
            raise self.error(self.text, exc.position, problem) from None
        if close is None or end < tokens[close].start:  # the end of the text, or SQL CQL does not read
            found = repr(self.text[end]) if end < len(self.text) else "the end of the text"
            raise self.error(self.text, end, f"expected ']', found {found}")
        self.windows[tokens[i - 1].text] = window
        self.sql = blank(self.sql, tokens[i].start, tokens[close].end + 1)
        return close + 1

    def _clause_end(self, tokens: list[Token], i: int, stops: tuple[str, ...]) -> int:
        depth = 0
        for tok in tokens[i:]:
            depth += tok.token_type == TokenType.L_PAREN
            depth -= tok.token_type == TokenType.R_PAREN
            if depth == 0 and tok.text.upper() in stops:
                return int(tok.start)
        return len(self.text)

    def read(
        self, clause: str, span: tuple[int, int], names: list[str], aliases: Mapping[str, str] | None = None
    ) -> Any:
        """Return CQL's `within` or `shed` clause at `span`; `aliases`: other names of the streams."""
        try:
            return parse_clause(only(self.text, *span), clause, self.streams, names, aliases=aliases)
        except CqlError as exc:
            raise self.error(self.text, exc.position, exc.problem) from None
