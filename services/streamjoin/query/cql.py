"""Parse the CQL subset of semantics.md section 4 into the query JSON; format a query back as CQL.

A hand-written tokenizer and recursive-descent parser: the text is data, never evaluated. Grammar
(keywords case-insensitive, identifiers case-sensitive, `"quoted"` identifiers for anything else)::

    query     := SELECT select FROM input ("," input)* [WHERE condition] [";"]
    select    := "*" | ref ("," ref)*
    input     := stream "[" window "]"
    window    := RANGE number [unit] | ROWS integer | PARTITION BY field ROWS integer
    condition := term (AND term)*
    term      := "(" condition ")" | operand op operand
    operand   := ref | number | 'string' | TRUE | FALSE | NULL
    ref       := stream "." field
    op        := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    unit      := MS | MILLISECOND[S] | SECOND[S] | MINUTE[S] | HOUR[S] | DAY[S]

A bare RANGE is in the query's timestamp unit; a unit converts to milliseconds (so it assumes
millisecond timestamps). Every problem raises `CqlError` (a `QueryError` with field `cql`) whose
message gives the character position.

>>> streams = {"a": Stream("net.a", "ts"), "b": Stream("net.b", "ts")}
>>> q = parse_cql("SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src", streams)
>>> q["inputs"][1]
{'stream': 'b', 'topic': 'net.b', 'timestamp': 'ts', 'window': {'rows': 50}}
>>> q["where"]
[['a.src', '=', 'b.src']]
>>> parse_cql("SELECT * FROM a [RANGE 0], b [ROWS 50]", streams)
Traceback (most recent call last):
...
streamjoin.query.cql.CqlError: cql: a RANGE window must be > 0 at position 23 (line 1, column 24)
>>> format_cql(q)
'SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streamjoin.query.parse import QueryError

__all__ = ["MAX_CQL_LENGTH", "CqlError", "CqlStream", "Stream", "format_cql", "parse_cql"]

MAX_CQL_LENGTH = 65_536
_MAX_DEPTH = 32

RESERVED = frozenset(
    {
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "RANGE",
        "ROWS",
        "PARTITION",
        "BY",
        "TRUE",
        "FALSE",
        "NULL",
    }
)
_UNITS_MS = {
    "MS": 1, "MILLISECOND": 1, "MILLISECONDS": 1, "SECOND": 1_000, "SECONDS": 1_000,
    "MINUTE": 60_000, "MINUTES": 60_000, "HOUR": 3_600_000, "HOURS": 3_600_000,
    "DAY": 86_400_000, "DAYS": 86_400_000,
}  # fmt: skip
_OPS = {"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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

    def __init__(self, text: str, position: int, message: str) -> None:
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__("cql", f"{message} at position {position} (line {line}, column {column})")
        self.position = position


class CqlStream(Protocol):
    """What the parser needs of a registered stream."""

    @property
    def topic(self) -> str:
        """The Kafka topic of the stream."""
        ...

    @property
    def timestamp(self) -> str | None:
        """The timestamp field (None: the Kafka record timestamp)."""
        ...


@dataclass(frozen=True, slots=True)
class Stream:
    """A minimal `CqlStream`, for callers without a registry (tests, the replay CLI)."""

    topic: str
    timestamp: str | None = None


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, word, qident, string, op, punct, end
    text: str
    pos: int

    @property
    def keyword(self) -> str | None:
        return self.text.upper() if self.kind == "word" else None


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise CqlError(text, pos, f"unexpected character {text[pos]!r}")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    """Recursive descent over the token list; builds the query JSON fragments."""

    def __init__(self, text: str, streams: Mapping[str, CqlStream]) -> None:
        self.text = text
        self.streams = streams
        self.tokens = _tokenize(text)
        self.i = 0
        self.inputs: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self.refs: list[tuple[str, _Token]] = []  # stream of each ref, to check after FROM

    # -- helpers --------------------------------------------------------------------------------
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, message: str, token: _Token | None = None) -> CqlError:
        return CqlError(self.text, (token or self.tok).pos, message)

    def describe(self, token: _Token) -> str:
        return "the end of the text" if token.kind == "end" else repr(token.text)

    def take(self) -> _Token:
        token = self.tok
        self.i += 1
        return token

    def accept(self, keyword: str) -> bool:
        if self.tok.keyword == keyword:
            self.i += 1
            return True
        return False

    def expect(self, keyword: str) -> None:
        if not self.accept(keyword):
            raise self.fail(f"expected {keyword}, found {self.describe(self.tok)}")

    def punct(self, char: str) -> bool:
        if self.tok.kind == "punct" and self.tok.text == char:
            self.i += 1
            return True
        return False

    def expect_punct(self, char: str) -> None:
        if not self.punct(char):
            raise self.fail(f"expected {char!r}, found {self.describe(self.tok)}")

    def identifier(self, what: str, *, allow_keyword: bool = False) -> str:
        token = self.tok
        if token.kind == "qident":
            self.i += 1
            name = token.text[1:-1].replace('""', '"')
            if not name:
                raise self.fail(f"empty {what}", token)
            return name
        if token.kind == "word" and (allow_keyword or token.text.upper() not in RESERVED):
            self.i += 1
            return token.text
        if token.kind == "word":
            raise self.fail(f'expected {what}, found keyword {token.text!r} (quote it: "{token.text}")')
        raise self.fail(f"expected {what}, found {self.describe(token)}")

    def number(self, what: str) -> tuple[int | float, _Token]:
        token = self.tok
        if token.kind != "number":
            raise self.fail(f"expected {what}, found {self.describe(token)}")
        self.i += 1
        if len(token.text) > 40:  # int() of 4,300 digits raises; no window or constant needs 40
            raise self.fail(f"{what} has too many digits", token)
        value: int | float = float(token.text) if any(c in token.text for c in ".eE") else int(token.text)
        if not math.isfinite(value):
            raise self.fail(f"{what} must be finite", token)
        return value, token

    # -- grammar ---------------------------------------------------------------------------------
    def query(self) -> dict[str, Any]:
        self.expect("SELECT")
        select = self.select()
        self.expect("FROM")
        self.input()
        while self.punct(","):
            self.input()
        where: list[list[Any]] = []
        if self.accept("WHERE"):
            self.condition(where, depth=0)
        self.punct(";")
        if self.tok.kind != "end":
            if self.tok.keyword in ("OR", "NOT"):
                raise self.fail(f"{self.tok.keyword} is not supported: WHERE is a conjunction (AND)")
            raise self.fail(f"unexpected {self.describe(self.tok)}")
        for stream, token in self.refs:
            if stream not in self.names:
                raise self.fail(f"stream {stream!r} is not in FROM", token)
        out: dict[str, Any] = {"inputs": self.inputs, "where": where}
        if select is not None:
            out["select"] = select
        return out

    def select(self) -> list[str] | None:
        if self.punct("*"):
            return None
        refs = [self.ref()]
        while self.punct(","):
            refs.append(self.ref())
        return refs

    def ref(self) -> str:
        start = self.tok
        stream = self.identifier("a stream name")
        if not (self.tok.kind == "punct" and self.tok.text == "."):
            raise self.fail(f"qualify the field with its stream (stream.field), found {stream!r}", start)
        self.i += 1
        field = self.identifier("a field name", allow_keyword=True)
        self.refs.append((stream, start))
        return f"{stream}.{field}"

    def input(self) -> None:
        start = self.tok
        name = self.identifier("a stream name")
        if name not in self.streams:
            raise self.fail(f"unknown stream {name!r}; registered: {sorted(self.streams)}", start)
        if name in self.names:
            raise self.fail(f"stream {name!r} appears twice in FROM", start)
        self.names.add(name)
        self.expect_punct("[")
        window = self.window()
        self.expect_punct("]")
        stream = self.streams[name]
        self.inputs.append(
            {"stream": name, "topic": stream.topic, "timestamp": stream.timestamp, "window": window}
        )

    def window(self) -> dict[str, Any]:
        if self.accept("RANGE"):
            size, token = self.number("a window size")
            unit = self.tok.keyword
            if unit in _UNITS_MS:
                self.i += 1
                size = size * _UNITS_MS[unit]
                if isinstance(size, float) and size.is_integer():
                    size = int(size)
            if size <= 0:
                raise self.fail("a RANGE window must be > 0", token)
            return {"range": size}
        partition_by = None
        if self.accept("PARTITION"):
            self.expect("BY")
            partition_by = self.identifier("a field name", allow_keyword=False)
        if self.accept("ROWS"):
            rows, token = self.number("a row count")
            if not isinstance(rows, int) or rows <= 0:
                raise self.fail("a ROWS window must be an integer > 0", token)
            return {"rows": rows} if partition_by is None else {"rows": rows, "partition_by": partition_by}
        raise self.fail(f"expected RANGE, ROWS or PARTITION BY, found {self.describe(self.tok)}")

    def condition(self, where: list[list[Any]], depth: int) -> None:
        self.term(where, depth)
        while self.accept("AND"):
            self.term(where, depth)

    def term(self, where: list[list[Any]], depth: int) -> None:
        if self.tok.kind == "punct" and self.tok.text == "(":
            if depth >= _MAX_DEPTH:
                raise self.fail(f"parentheses nested deeper than {_MAX_DEPTH}")
            self.i += 1
            self.condition(where, depth + 1)
            self.expect_punct(")")
            return
        start = self.tok
        left, left_ref = self.operand()
        op = self.tok
        if op.kind != "op":
            raise self.fail(f"expected a comparison (=, !=, <, <=, >, >=), found {self.describe(op)}")
        self.i += 1
        right, right_ref = self.operand()
        if not (left_ref or right_ref):
            raise self.fail("a comparison must mention a field (stream.field)", start)
        where.append([left, _OPS[op.text], right])

    def operand(self) -> tuple[Any, bool]:
        token = self.tok
        if token.kind == "number":
            return self.number("a number")[0], False
        if token.kind == "string":
            self.i += 1
            value = token.text[1:-1].replace("''", "'")
            head, dot, rest = value.partition(".")
            if dot and rest and head.isidentifier():
                raise self.fail(f"the string {value!r} would read as a field reference; not supported", token)
            return value, False
        keyword = token.keyword
        if keyword in ("TRUE", "FALSE", "NULL"):
            self.i += 1
            return {"TRUE": True, "FALSE": False, "NULL": None}[keyword], False
        if keyword in ("OR", "NOT"):
            raise self.fail(f"{keyword} is not supported: WHERE is a conjunction (AND)")
        return self.ref(), True


def parse_cql(text: str, streams: Mapping[str, CqlStream]) -> dict[str, Any]:
    """Return the `inputs`, `where` and (unless `SELECT *`) `select` of the query JSON for `text`.

    Args:
        text: the CQL text.
        streams: the registered streams by name; each input's topic and timestamp come from here.

    Raises:
        CqlError: the text is not in the subset, names an unknown stream, or has a bad window.
    """
    if not isinstance(text, str):
        raise QueryError("cql", "must be a string")
    if len(text) > MAX_CQL_LENGTH:
        raise CqlError(text, MAX_CQL_LENGTH, f"the text is longer than {MAX_CQL_LENGTH} characters")
    return _Parser(text, streams).query()


def _ident(name: str) -> str:
    if _IDENT.fullmatch(name) and name.upper() not in RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _field(name: str) -> str:
    return name if _IDENT.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def _operand(value: Any, streams: frozenset[str]) -> str:
    if isinstance(value, str):
        stream, dot, field = value.partition(".")
        if dot and field and stream in streams:
            return f"{_ident(stream)}.{_field(field)}"
        return "'" + value.replace("'", "''") + "'"
    if value is None or isinstance(value, bool):
        return {None: "NULL", True: "TRUE", False: "FALSE"}[value]
    if isinstance(value, int | float) and math.isfinite(value):
        return json.dumps(value)
    raise ValueError(f"cannot write {value!r} as a CQL literal")


def _window(window: Mapping[str, Any]) -> str:
    if "range" in window:
        return f"RANGE {json.dumps(window['range'])}"
    rows = f"ROWS {int(window['rows'])}"
    partition_by = window.get("partition_by")
    return rows if partition_by is None else f"PARTITION BY {_ident(partition_by)} {rows}"


def format_cql(query: Mapping[str, Any]) -> str:
    """Return the CQL text of a query JSON's inputs, where and select (the other fields have no CQL)."""
    inputs: Sequence[Mapping[str, Any]] = query["inputs"]
    streams = frozenset(str(i["stream"]) for i in inputs)
    select = query.get("select")
    head = "*" if not select else ", ".join(_operand(s, streams) for s in select)
    parts = [
        f"SELECT {head} FROM " + ", ".join(f"{_ident(i['stream'])} [{_window(i['window'])}]" for i in inputs)
    ]
    where = query.get("where") or []
    if where:
        conditions = (f"{_operand(a, streams)} {op} {_operand(b, streams)}" for a, op, b in where)
        parts.append("WHERE " + " AND ".join(conditions))
    return " ".join(parts)
