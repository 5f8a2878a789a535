"""The CQL tokenizer: text to tokens, and the error that gives a problem's position.

The text is data, never evaluated; `streamjoin.query.cql` parses the tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streamjoin.query.errors import QueryError

__all__ = ["CqlError", "Token", "tokenize"]

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<qident>"(?:[^"]|"")*")
      | (?P<string>'(?:[^']|'')*')
      | (?P<op><>|!=|<=|>=|[=<>])
      | (?P<punct>[*,.\[\]();])""",
    re.VERBOSE,
)


class CqlError(QueryError):
    """CQL text that cannot be accepted; `position` is the 0-based offset of the problem."""

    def __init__(self, text: str, position: int, message: str, field: str = "cql") -> None:
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__(field, f"{message} at position {position} (line {line}, column {column})")
        self.position = position
        self.problem = message
        """The message without its position."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, word, qident, string, op, punct, end
    text: str
    pos: int

    @property
    def keyword(self) -> str | None:
        return self.text.upper() if self.kind == "word" else None


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise CqlError(text, pos, f"unexpected character {text[pos]!r}")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens
