"""Bounded joins as Flink SQL and ksqlDB write them, read as W-join `within` pairs (docs/queries.md).

- `INTERVAL 'n' unit` is a number of milliseconds (the texts assume millisecond timestamps).
- Flink's interval join: comparisons of two inputs' timestamp fields, each side plus or minus a
  constant (`o.ts BETWEEN p.ts - INTERVAL '10' SECOND AND p.ts`, `o.ts >= p.ts - ...`). When they
  bound `ts(x) - ts(y)` from both sides, within `[lo, hi]`, the pair gets the `within` bound
  `max(hi, -lo)`, which they imply, so nothing changes in the results; each comparison the pair
  implies is dropped, the others stay where they were (the `where` triples or the `filter`).
- ksqlDB's `JOIN s WITHIN n unit ON ...` on the first JOIN is the pair of its two inputs;
  `WITHIN (before, after)` is `before <= ts(s) - ts(left) <= after` written as such comparisons.

>>> from streamjoin.query.expr import Call, Lit, Ref
>>> ts = {"o": "ts", "p": "ts"}
>>> term = Call(">=", (Ref("o", ("ts",)), Call("-", (Ref("p", ("ts",)), Lit(10_000)))))
>>> upper = Call("<=", (Ref("o", ("ts",)), Ref("p", ("ts",))))
>>> found = TimeBounds(["o", "p"], ts).collect([(0, term), (9, upper)], explicit=set())
>>> found.within, [t for _, t in found.terms] == [upper]
([['o', 'p', 10000]], True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from streamjoin.query.cql_lex import CqlError, Token, tokenize
from streamjoin.query.expr import Call, Expr, Lit, Ref
from streamjoin.query.units import in_ms, unit_ms, unknown_unit

__all__ = ["BoundsError", "BoundsFound", "TimeBounds", "interval_ms", "join_within", "timestamp_term"]

Term = tuple[int, Expr]
"""A term of the ON/WHERE conjunction and where it starts in the text."""

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def interval_ms(node: exp.Interval, fail: Callable[[exp.Expr, str], CqlError]) -> int | float:
    """Return SQL's `INTERVAL 'n' unit` (or `INTERVAL n unit`) in milliseconds."""
    unit = node.args.get("unit")
    if not isinstance(unit, exp.Var):
        raise fail(node, "an INTERVAL takes one unit (INTERVAL '90' MINUTE, not DAY TO SECOND)")
    if unit_ms(unit.name) is None:
        raise fail(node, unknown_unit(unit.name))
    value = node.this
    try:
        size = float(value.this) if isinstance(value, exp.Literal) else None
    except ValueError:
        size = None
    if size is None or size != size or abs(size) > 1e15:
        raise fail(node, "an INTERVAL's size is a number: INTERVAL '10' SECOND")
    return in_ms(int(size) if size.is_integer() else size, unit.name)


def timestamp_term(op: str, x: Ref, y: Ref, offset: int | float) -> Expr:
    """Return `x op y + offset` as an expression (`x op y` when the offset is 0)."""
    right: Expr = y if offset == 0 else Call("+" if offset > 0 else "-", (y, Lit(abs(offset))))
    return Call(op, (x, right))


# -- ksqlDB's JOIN ... WITHIN ---------------------------------------------------------------------


def join_within(text: str) -> tuple[int | float, int | float]:
    """Return (before, after) of ksqlDB's `WITHIN n unit` or `WITHIN (before unit, after unit)`.

    `text` holds the clause after WITHIN alone (everything else blanked). Raises `CqlError`.
    """
    tokens = tokenize(text)
    at = 0

    def take(kind: str, what: str) -> Token:
        nonlocal at
        token = tokens[at]
        if token.kind != kind and token.text != kind:
            found = "the end of the text" if token.kind == "end" else repr(token.text)
            raise CqlError(text, token.pos, f"expected {what}, found {found}")
        at += 1
        return token

    def size() -> int | float:
        nonlocal at
        number = take("number", "a size (10 SECONDS)")
        value = float(number.text) if any(c in number.text for c in ".eE") else int(number.text)
        if value < 0 or len(number.text) > 40:
            raise CqlError(text, number.pos, "a WITHIN size must be a number >= 0")
        word = tokens[at]
        if word.kind == "word" and word.keyword not in ("GRACE",):
            if unit_ms(word.text) is None:
                raise CqlError(text, word.pos, unknown_unit(word.text))
            at += 1
            return in_ms(value, word.text)
        return value

    if tokens[at].text == "(":
        at += 1
        before = size()
        take(",", "','")
        after = size()
        take(")", "')'")
    else:
        before = after = size()
    if tokens[at].keyword == "GRACE":
        raise CqlError(
            text,
            tokens[at].pos,
            'GRACE PERIOD: streamjoin waits for late records by the query\'s "lateness" (docs/queries.md): '
            'give "lateness" in milliseconds next to the sql',
        )
    take("end", "ON")
    return before, after


# -- Flink's interval joins -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of `ts(x) - ts(y)`: at least (`low`) or at most `value`, maybe strictly."""

    low: bool
    value: float
    strict: bool
    term: int  # index in the terms

    def implied_by(self, w: float) -> bool:
        """Return True if `|ts(x) - ts(y)| <= w` implies this side."""
        edge = -w if self.low else w
        closer = edge > self.value if self.low else edge < self.value
        return closer or (edge == self.value and not self.strict)


@dataclass(slots=True)
class BoundsFound:
    """What `TimeBounds.collect` found: new `within` pairs, the terms left, one-sided bounds."""

    within: list[list[Any]] = field(default_factory=list)
    terms: list[Term] = field(default_factory=list)
    one_sided: list[tuple[int, tuple[str, str]]] = field(default_factory=list)


class TimeBounds:
    """Find the comparisons of two inputs' timestamps in a conjunction and the pairs they bound."""

    def __init__(self, streams: Sequence[str], timestamps: Mapping[str, str | None]) -> None:
        """`streams`: the inputs in query order; `timestamps`: each one's timestamp field (None: Kafka's)."""
        self._order = {s: i for i, s in enumerate(streams)}
        self._timestamps = timestamps

    def _offset(self, value: Expr) -> tuple[str, float] | None:
        """Return (stream, c) when `value` is `ts(stream) + c`, else None."""
        if isinstance(value, Ref):
            field_name = self._timestamps.get(value.stream)
            return (value.stream, 0) if value.path == (field_name,) else None
        if isinstance(value, Call) and value.op in ("+", "-") and len(value.args) == 2:
            left, right = value.args
            if (shift := _number(right)) is not None and (base := self._offset(left)) is not None:
                return base[0], base[1] + (shift if value.op == "+" else -shift)
            if value.op == "+" and (shift := _number(left)) is not None and (base := self._offset(right)):
                return base[0], base[1] + shift
        return None

    def _sides(self, value: Expr, term: int) -> list[tuple[tuple[str, str], _Side]]:
        """Return the sides `value` puts on pairs of timestamps, or [] if it is not such a bound."""
        if not isinstance(value, Call):
            return []
        if value.op == "between" and len(value.args) == 3:
            x, low, high = value.args
            halves = [self._sides(Call(">=", (x, low)), term), self._sides(Call("<=", (x, high)), term)]
            return halves[0] + halves[1] if all(halves) else []
        if value.op not in _FLIP or len(value.args) != 2:
            return []
        a, b = (self._offset(v) for v in value.args)
        if a is None or b is None or a[0] == b[0]:
            return []
        op, c = value.op, b[1] - a[1]  # ts(a) op ts(b) + c
        pair = (a[0], b[0])
        if self._order[a[0]] > self._order[b[0]]:
            op, c, pair = _FLIP[op], -c, (b[0], a[0])
        sides = []
        if op in ("<", "<=", "="):
            sides.append((pair, _Side(False, c, op == "<", term)))
        if op in (">", ">=", "="):
            sides.append((pair, _Side(True, c, op == ">", term)))
        return sides

    def collect(self, terms: Sequence[Term], explicit: Iterable[frozenset[str]]) -> BoundsFound:
        """Return the `within` pairs the terms bound from both sides, and the terms they leave.

        Pairs in `explicit` (given by a WITHIN clause) keep their terms as they are.

        Raises:
            BoundsError: the bounds of a pair leave no pair of records.
        """
        given = set(explicit)
        by_pair: dict[tuple[str, str], list[_Side]] = {}
        by_term: dict[int, list[tuple[tuple[str, str], _Side]]] = {}
        for index, (_, value) in enumerate(terms):
            found_sides = [(p, s) for p, s in self._sides(value, index) if frozenset(p) not in given]
            if found_sides:
                by_term[index] = found_sides
            for pair, side in found_sides:
                by_pair.setdefault(pair, []).append(side)
        found = BoundsFound()
        bound: dict[tuple[str, str], float] = {}
        for pair, sides in by_pair.items():
            lows = [s for s in sides if s.low]
            highs = [s for s in sides if not s.low]
            if not lows or not highs:
                found.one_sided.append((terms[sides[0].term][0], pair))
                continue
            low = max(lows, key=lambda s: (s.value, s.strict))
            high = min(highs, key=lambda s: (s.value, not s.strict))
            if low.value > high.value or (low.value == high.value and (low.strict or high.strict)):
                position = terms[min(s.term for s in sides)][0]
                raise BoundsError(f"these bounds leave no pair of {pair[0]} and {pair[1]} records", position)
            w = max(high.value, -low.value)
            if w > 0:  # else equal timestamps: a join on the timestamp, no W-join bound
                bound[pair] = w
                found.within.append([pair[0], pair[1], int(w) if float(w).is_integer() else w])
        found.terms = [
            t
            for i, t in enumerate(terms)
            if not (i in by_term and all(p in bound and s.implied_by(bound[p]) for p, s in by_term[i]))
        ]
        return found


class BoundsError(ValueError):
    """Timestamp bounds that no pair of records satisfies; `position`: where the first one starts."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def _number(value: Expr) -> float | None:
    """Return `value` when it is a number literal, else None."""
    if isinstance(value, Lit) and isinstance(value.value, int | float) and not isinstance(value.value, bool):
        return value.value
    return None
