"""Parse the CQL subset of docs/queries.md, "CQL" into the query JSON; format a query back as CQL.

A hand-written tokenizer and recursive-descent parser: the text is data, never evaluated. Grammar
(keywords case-insensitive, identifiers case-sensitive, `"quoted"` identifiers for anything else)::

    query     := SELECT select FROM input ("," input)* [WITHIN pair ("," pair)*]
                 [WHERE condition] [shed] [";"]
    select    := "*" | ref ("," ref)*
    input     := stream ["[" window "]"]
    window    := RANGE number [unit] [STRICT] | ROWS integer | PARTITION BY field ROWS integer
    pair      := "(" stream "," stream ")" number [unit]
    condition := term (AND term)*
    term      := "(" condition ")" | operand op operand
    operand   := ref | number | 'string' | TRUE | FALSE | NULL
    ref       := stream "." field
    op        := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    unit      := MS | MILLISECOND[S] | SECOND[S] | MINUTE[S] | HOUR[S] | DAY[S]  (streamjoin.query.units)
    shed      := SHED MEMORY integer POLICY name [IMPORTANCE field] [COMBINE name] [SEED integer]

The SHED clause is the query's `shedding` field (`streamjoin.query.shedding`); its words are
keywords only there, so a stream named `shed` needs no quotes.

A bare RANGE or WITHIN bound is in the query's timestamp unit; a unit converts to milliseconds (so
it assumes millisecond timestamps). `WITHIN (a, b) 50` is the `within` pair `["a", "b", 50]`; an
input without `[window]` is bounded by its pairs only; `STRICT` makes a range window exclusive.
Every problem raises `CqlError` (a `QueryError` with field `cql`) whose message gives the character
position.

>>> streams = {"a": Stream("net.a", "ts"), "b": Stream("net.b", "ts")}
>>> q = parse_cql("SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src", streams)
>>> q["inputs"][1]
{'stream': 'b', 'topic': 'net.b', 'timestamp': 'ts', 'window': {'rows': 50}}
>>> q["where"]
[['a.src', '=', 'b.src']]
>>> parse_cql("SELECT * FROM a [RANGE 0], b [ROWS 50]", streams)
Traceback (most recent call last):
...
streamjoin.query.cql_lex.CqlError: cql: a RANGE window must be > 0 at position 23 (line 1, column 24)
>>> format_cql(q)
'SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src'
>>> w = parse_cql("SELECT * FROM a [RANGE 100 STRICT], b WITHIN (a, b) 50 WHERE a.src = b.src", streams)
>>> w["inputs"][0]["window"], "window" in w["inputs"][1], w["within"]
({'range': 100, 'strict': True}, False, [['a', 'b', 50]])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamjoin.query.cql_format import RESERVED, format_cql
from streamjoin.query.cql_lex import CqlError, Token, tokenize
from streamjoin.query.cql_stream import CqlStream, Stream
from streamjoin.query.grammar import COMBINE_NAMES, COMPARISONS, POLICY_NAMES, WINDOW_KINDS
from streamjoin.query.parse import QueryError
from streamjoin.query.units import TIME_UNITS_MS, in_ms, unknown_unit

__all__ = ["MAX_CQL_LENGTH", "CqlError", "CqlStream", "Stream", "format_cql", "parse_clause", "parse_cql"]

MAX_CQL_LENGTH = 65_536
_MAX_DEPTH = 32

# Words that may follow a size without being its unit: an unknown word there is a misspelt unit.
_AFTER_SIZE = RESERVED | {"SHED"}
_OPS: dict[str, str] = {**{op: op for op in COMPARISONS}, "<>": "!="}
_WINDOW_WORDS = f"{', '.join(kind.upper() for kind in WINDOW_KINDS)} or PARTITION BY"


class _Parser:
    """Recursive descent over the token list; builds the query JSON fragments."""

    def __init__(self, text: str, streams: Mapping[str, CqlStream]) -> None:
        self.text = text
        self.streams = streams
        self.tokens = tokenize(text)
        self.i = 0
        self.inputs: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self.refs: list[tuple[str, Token]] = []  # stream of each ref, to check after FROM
        self.within: list[list[Any]] = []
        self.aliases: Mapping[str, str] = {}  # another name of a stream in FROM (SQL's aliases)

    # -- helpers --------------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, message: str, token: Token | None = None) -> CqlError:
        return CqlError(self.text, (token or self.tok).pos, message)

    def describe(self, token: Token) -> str:
        return "the end of the text" if token.kind == "end" else repr(token.text)

    def take(self) -> Token:
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

    def number(self, what: str) -> tuple[int | float, Token]:
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
        if self.accept("WITHIN"):
            self.pair()
            while self.punct(","):
                self.pair()
        where: list[list[Any]] = []
        if self.accept("WHERE"):
            self.condition(where, depth=0)
        shedding = self.shed() if self.accept("SHED") else None
        self.punct(";")
        if self.tok.kind != "end":
            if self.tok.keyword in ("OR", "NOT"):
                raise self.fail(f"{self.tok.keyword} is not supported: WHERE is a conjunction (AND)")
            raise self.fail(f"unexpected {self.describe(self.tok)}")
        for stream, token in self.refs:
            if stream not in self.names:
                raise self.fail(f"stream {stream!r} is not in FROM", token)
        out: dict[str, Any] = {"inputs": self.inputs, "where": where}
        if self.within:
            out["within"] = self.within
        if select is not None:
            out["select"] = select
        if shedding is not None:
            out["shedding"] = shedding
        return out

    def shed(self) -> dict[str, Any]:
        self.expect("MEMORY")
        memory, token = self.number("a memory budget (records)")
        if not isinstance(memory, int) or memory <= 0:
            raise self.fail("MEMORY must be an integer > 0", token)
        self.expect("POLICY")
        out: dict[str, Any] = {"memory": memory, "policy": self.choice(POLICY_NAMES, "a policy")}
        if self.accept("IMPORTANCE"):
            out["importance"] = self.identifier("an importance field", allow_keyword=True)
        if self.accept("COMBINE"):
            out["combine"] = self.choice(COMBINE_NAMES, "a combine function")
        if self.accept("SEED"):
            seed, token = self.number("a seed")
            if not isinstance(seed, int):
                raise self.fail("SEED must be an integer", token)
            out["seed"] = seed
        return out

    def choice(self, names: Sequence[str], what: str) -> str:
        token = self.tok
        if token.kind != "word" or token.text.lower() not in names:
            raise self.fail(f"expected {what} ({', '.join(names)}), found {self.describe(token)}")
        self.i += 1
        return token.text.lower()

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
        stream = self.streams[name]
        entry: dict[str, Any] = {"stream": name, "topic": stream.topic, "timestamp": stream.timestamp}
        entry |= {} if stream.key is None else {"key": stream.key}
        if self.punct("["):
            entry["window"] = self.window()
            self.expect_punct("]")
        self.inputs.append(entry)

    def duration(self, what: str) -> int | float:
        """Read `number [unit]` and return it in the query's unit (milliseconds if a unit is given)."""
        size, token = self.number(what)
        unit = self.tok.keyword
        if unit is not None and unit in TIME_UNITS_MS:
            self.i += 1
            size = in_ms(size, unit)
        elif unit is not None and unit not in _AFTER_SIZE and self._ends_clause(self.tokens[self.i + 1]):
            raise self.fail(unknown_unit(self.tok.text))
        if size <= 0:
            raise self.fail(f"{what} must be > 0", token)
        return size

    @staticmethod
    def _ends_clause(token: Token) -> bool:
        """Return True if `token` may end a size's clause (a word before it is a unit, or a typo)."""
        return token.kind == "end" or token.text in ("]", ",", ")", ";") or token.keyword in _AFTER_SIZE

    def pair(self) -> None:
        start = self.tok
        self.expect_punct("(")
        names = []
        for n in range(2):
            token = self.tok
            name = self.identifier("a stream name")
            name = self.aliases.get(name, name)
            if name not in self.names:
                raise self.fail(f"stream {name!r} is not in FROM", token)
            names.append(name)
            if n == 0:
                self.expect_punct(",")
        self.expect_punct(")")
        if names[0] == names[1]:
            raise self.fail(f"WITHIN bounds {names[0]!r} against itself; name two different streams", start)
        if any({p[0], p[1]} == set(names) for p in self.within):
            raise self.fail(f"the pair ({names[0]}, {names[1]}) appears twice in WITHIN", start)
        self.within.append([names[0], names[1], self.duration("a WITHIN bound")])

    def window(self) -> dict[str, Any]:
        if self.accept("RANGE"):
            size = self.duration("a RANGE window")
            return {"range": size, "strict": True} if self.accept("STRICT") else {"range": size}
        partition_by = None
        if self.accept("PARTITION"):
            self.expect("BY")
            partition_by = self.identifier("a field name", allow_keyword=False)
        if self.accept("ROWS"):
            rows, token = self.number("a row count")
            if not isinstance(rows, int) or rows <= 0:
                raise self.fail("a ROWS window must be an integer > 0", token)
            return {"rows": rows} if partition_by is None else {"rows": rows, "partition_by": partition_by}
        raise self.fail(f"expected {_WINDOW_WORDS}, found {self.describe(self.tok)}")

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
            raise self.fail(f"expected a comparison ({', '.join(COMPARISONS)}), found {self.describe(op)}")
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


def parse_clause(
    text: str,
    clause: str,
    streams: Mapping[str, CqlStream],
    names: Iterable[str],
    *,
    aliases: Mapping[str, str] | None = None,
    closer: str | None = None,
) -> Any:
    """Parse the one CQL clause left in `text` (everything else blanked, so positions stay right).

    `clause` is `window` (the inside of `[...]`), `within` (the pairs after WITHIN) or `shed` (what
    follows SHED); `names` are the streams in FROM, `aliases` other names of them (the stream of
    each). Anything after the clause is an error: "expected `closer`" when it is given. The SQL
    front end (`streamjoin.query.sql`) reads CQL's window clauses with this, so both languages spell
    them alike.
    """
    parser = _Parser(text, streams)
    parser.names = set(names)
    parser.aliases = aliases or {}
    out: Any
    if clause == "window":
        out = parser.window()
    elif clause == "within":
        parser.pair()
        while parser.punct(","):
            parser.pair()
        out = parser.within
    else:
        out = parser.shed()
    if parser.tok.kind != "end":
        found = parser.describe(parser.tok)
        raise parser.fail(f"expected {closer!r}, found {found}" if closer else f"unexpected {found}")
    return out
