"""Hypothesis strategies: random multi-way join queries and their inputs (no late records unless asked).

A `Case` is a query (built through `parse_query` from its JSON, so the parser is exercised too) and
the events of every input in arrival order. The shapes follow issue #3: 2-5 inputs; windows mixing
range, rows and rows with `partition_by`; join graphs on one common attribute or chains on different
attributes, with extra equalities; theta predicates between inputs and single-input filters (also on
rows windows); skewed keys; equal timestamps within and across streams; 1 or 2 partitions per input;
disorder within `lateness`, repaired so that no record is late. Records carry only the fields the
query reads, plus `ts`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from streamjoin.query import QueryDef, parse_query
from streamjoin.query.model import FieldRef, RowsWindow
from streamjoin.testing import Event, late_events, watermarks

__all__ = [
    "STREAMS",
    "Case",
    "cases",
    "max_records_for",
    "query_json",
    "reproducer",
    "with_modes",
]

STREAMS = ("a", "b", "c", "d", "e")
_KEY_FIELDS = ("x", "y", "z")
_THETA = ("!=", "<", "<=", ">", ">=")
_ALL_OPS = ("=", "!=", "<", "<=", ">", ">=")
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def max_records_for(n: int) -> int:
    """Return the most records one input gets in a case with `n` inputs (keeps the oracle fast)."""
    return {2: 12, 3: 10, 4: 6, 5: 5}[n]


class Case:
    """A random query and its input events, in arrival order (printed as a compact reproducer)."""

    __slots__ = ("events", "query", "raw")

    def __init__(self, raw: dict[str, Any], query: QueryDef, events: tuple[Event, ...]) -> None:
        self.raw = raw
        self.query = query
        self.events = events

    def __repr__(self) -> str:
        return f"Case(query + events, one JSON per line):\n{self.describe()}\n"

    def describe(self) -> str:
        """Return the query JSON and events JSON lines: a reproducer to paste into a bug report."""
        return reproducer(self.raw, self.events)


def reproducer(raw: Mapping[str, Any], events: Sequence[Event]) -> str:
    """Return a query and its events as JSON lines (the query first)."""
    lines = [json.dumps(raw)]
    lines += [
        json.dumps(
            {"stream": e.stream, "partition": e.partition, "offset": e.offset, "record": dict(e.record)}
        )
        for e in events
    ]
    return "\n".join(lines)


def with_modes(raw: dict[str, Any], **fields: Any) -> QueryDef:
    """Return the query parsed from `raw` with some top-level fields replaced (evaluation, order...)."""
    return parse_query({**raw, **fields})


_SIZES = st.one_of(st.integers(1, 6), st.integers(1, 50))
_WINDOW = st.one_of(
    st.builds(lambda t: {"range": t}, _SIZES),
    st.builds(lambda n: {"rows": n}, st.integers(1, 6)),
    st.builds(lambda n: {"rows": n, "partition_by": "g"}, st.integers(1, 6)),
)
_BOOL = st.booleans()
_KEY_FIELD = st.sampled_from(_KEY_FIELDS)
_SMALL = st.integers(0, 5)
_LATENESS = st.sampled_from([0, 0, 1, 2, 3, 5])
# Strategies reused for every record (building them per draw makes generation several times slower).
_HOT_KEY = {d: st.one_of(st.just(1), st.integers(1, d)) for d in range(1, 5)}  # key 1: about half
_GROUP = st.integers(1, 2)
_DISORDER = {lateness: st.integers(0, lateness) for lateness in range(6)}
_STEP = st.integers(0, 3)
_PARTITION_CHOICE = st.integers(0, 1)
_LAG = st.sampled_from([0, 0, 0, 1, 3, 10])


@st.composite
def _equality(draw: st.DrawFn, left: str, right: str, common: bool) -> list[Any]:
    if common:
        lf = rf = "k"
    else:
        lf = draw(_KEY_FIELD)
        rf = lf if draw(_BOOL) else draw(_KEY_FIELD)
    pair = [f"{left}.{lf}", "=", f"{right}.{rf}"]
    return pair if draw(_BOOL) else pair[::-1]


@st.composite
def _filter(draw: st.DrawFn, stream: str) -> list[Any]:
    op = draw(st.sampled_from(_ALL_OPS))
    field = f"{stream}.v"
    other: Any = f"{stream}.k" if draw(_BOOL) else draw(_SMALL)
    if draw(_BOOL):
        return [field, op, other]
    return [other, _FLIP[op], field]


@st.composite
def query_json(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """Draw the JSON of a connected query over `n` inputs (modes left at their defaults)."""
    names = STREAMS[:n]
    pair = st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True)
    common = draw(st.sampled_from(["common", "different", "mixed"]))
    chain = draw(_BOOL)
    where: list[list[Any]] = []
    for i in range(1, n):
        parent = i - 1 if chain else draw(st.integers(0, i - 1))
        same_key = common == "common" or (common == "mixed" and draw(_BOOL))
        where.append(draw(_equality(names[parent], names[i], same_key)))
    for _ in range(draw(st.integers(0, 1))):
        left, right = draw(pair)
        where.append(draw(_equality(left, right, common == "common")))
    few = 2 if n <= 3 else 1  # every extra predicate makes a result rarer
    for _ in range(draw(st.integers(0, few))):
        left, right = draw(pair)
        where.append([f"{left}.v", draw(st.sampled_from(_THETA)), f"{right}.v"])
    for _ in range(draw(st.integers(0, few))):
        where.append(draw(_filter(draw(st.sampled_from(names)))))
    order = draw(st.permutations(range(len(where))))
    return {
        "name": "prop",
        "inputs": [
            {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": draw(_WINDOW)} for s in names
        ],
        "where": [where[i] for i in order],
        "output": {"topic": "out"},
        "lateness": draw(_LATENESS),
    }


def _fields(query: QueryDef) -> list[str]:
    """Return the record fields the query reads (records carry only these, and `ts`)."""
    used = {o.field for p in query.where for o in (p.left, p.right) if isinstance(o, FieldRef)}
    used |= {
        i.window.partition_by
        for i in query.inputs
        if isinstance(i.window, RowsWindow) and i.window.partition_by
    }
    return sorted(used)


@st.composite
def _events(
    draw: st.DrawFn, query: QueryDef, max_records: int, late: bool, max_partitions: int
) -> tuple[Event, ...]:
    names = query.stream_names
    n_partitions = {s: draw(st.integers(1, max_partitions)) for s in names}
    lag = {(s, p): 0 if late else draw(_LAG) for s in names for p in range(2)}  # a lag hides lateness
    scale = draw(st.sampled_from([1, 1, 4]))
    key = _HOT_KEY[draw(st.integers(1, 4))]
    record = st.fixed_dictionaries(
        {f: _GROUP if f == "g" else _SMALL if f == "v" else key for f in _fields(query)}
    )
    lateness = int(query.lateness)
    disorder = _DISORDER[lateness]
    if late:  # often beyond lateness, and every input sends (a silent one holds the watermark back)
        disorder = st.one_of(disorder, st.integers(lateness, lateness + 8))
    per_event = st.tuples(_PARTITION_CHOICE, _STEP, disorder, record)
    count = st.one_of(st.just(max_records), st.integers(1 if late else 0, max_records))
    arrivals = draw(st.permutations([s for s in names for _ in range(draw(count))]))
    offsets: dict[tuple[str, int], int] = {}
    clock = 0
    events: list[Event] = []
    for stream in arrivals:
        choice, step, back, fields = draw(per_event)
        partition = choice % n_partitions[stream]
        clock += scale * step
        ts = max(0, clock - lag[(stream, partition)] - back)
        offset = offsets.get((stream, partition), 0)
        offsets[(stream, partition)] = offset + 1
        event = Event(stream, partition, offset, ts, {"ts": ts, **fields})
        mark = watermarks(query, [*events, event])[-1]
        # Repair: never late under the oracle's default watermark (partitions seen so far, never going
        # back), which no watermark over a larger set of partitions (the engine's) can exceed.
        if ts < mark and not late:
            ts = math.ceil(mark)
            event = replace(event, ts=ts, record={"ts": ts, **fields})
        events.append(event)
    if not late:
        assert not late_events(query, events), "the generator produced a late record"
    return tuple(events)


@st.composite
def cases(
    draw: st.DrawFn, n: int | Sequence[int] = (2, 3, 4, 5), *, late: bool = False, max_partitions: int = 2
) -> Case:
    """Draw a `Case` with `n` inputs (or one of the given counts).

    With `late=False` no record is late, whatever partitions the watermark is taken over; with
    `late=True` disorder may exceed `lateness` and records may be late. `max_partitions=1` gives
    every input one partition, as in a replay file.
    """
    count = n if isinstance(n, int) else draw(st.sampled_from(list(n)))
    raw = draw(query_json(count))
    query = parse_query(raw)
    events = draw(_events(query, max_records_for(count), late, max_partitions))
    return Case(raw, query, events)
