"""A brute-force oracle for the result set of a query, written straight from semantics.md section 3.

It shares no code with the engine and is kept as simple as it can be, because everything else
(the engine's property tests, the joiner, replay and back-fill tests) trusts it:

- a **result** is one record per input such that every `where` predicate holds, every component
  is inside its window as seen at `t_max`, the largest timestamp of the components (a strict range
  window excludes its bound: `t_max - ts < range`), and every `within` pair `[x, y, w]` has
  `|ts(x) - ts(y)| <= w` (an input without a window is bounded by its pairs only);
- a **late** record (timestamp below the watermark when it arrives, section 1) is never joined and
  does not occupy a window: the oracle leaves it out. Tests that want exact equality generate
  inputs without late records and check that with `late_events`.

Choices where semantics.md is silent (documented here, and what the engine is tested against):

- **Watermark before the first record.** An input partition that has seen nothing yet holds the
  watermark at -infinity. By default the partitions of the query are the ones seen so far, and
  every input holds the watermark at -infinity until its first record arrives (in replay each
  stream is one partition, so this is exact). Pass `partitions` to name the full set up front, as a
  Kafka consumer knows it from the topic metadata (and as `MultiJoin(partitions=...)` is told); a
  named partition that never sends holds the watermark at -infinity for good.
- **The watermark never goes back.** With partitions discovered as they send, a new partition may
  have older records than the watermark already reached; the watermark stays where it was (as in
  Flink), so those records are late. With a fixed set of partitions this changes nothing.
- **Predicates.** An operand `stream.field` is `record[field]`, a literal is itself; comparisons
  are Python's operators. A missing field, or operands Python cannot compare (`TypeError`), make the
  predicate false, for every operator including `!=`.
- **`filter`.** Checked on each complete result, after the windows (`oracle_filter`): a record
  that fails it still occupies its window.
- **`partition_by`.** Records are grouped by `record.get(field)`: a record without the field is in
  the group of `null`.

Example (Golab & Özsu's Tables 2 and 3: only two combinations are inside every window):

>>> from streamjoin.query import parse_query
>>> q = parse_query({
...     "name": "golab", "output": {"topic": "out"},
...     "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 100}} for s in ("S1", "S2", "S3")],
...     "where": [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"]],
... })
>>> arrivals = [("S1", 90), ("S1", 100), ("S2", 150), ("S2", 180), ("S3", 195), ("S3", 205)]
>>> events = replay_events(q, [(s, {"ts": ts, "attr": 1}) for s, ts in arrivals])
>>> sorted(expected_results(q, events))
[((0, 1), (0, 0), (0, 0)), ((0, 1), (0, 1), (0, 0))]
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from streamjoin.query.model import FieldRef, Operand, Predicate, QueryDef, RangeWindow, RowsWindow
from streamjoin.testing.oracle_filter import filter_holds

__all__ = [
    "EntryLike",
    "Event",
    "ResultKey",
    "expected_results",
    "late_events",
    "replay_events",
    "result_key",
    "watermarks",
]

ResultKey: TypeAlias = tuple[tuple[int, int], ...]
"""A result: the (partition, offset) of each component, in query input order."""

_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Event:
    """One arriving record of input `stream`: its partition, its offset there, its timestamp."""

    stream: str
    partition: int
    offset: int
    ts: float
    record: Mapping[str, Any]


class EntryLike(Protocol):
    """What `result_key` needs of an engine's result component."""

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...


def result_key(entries: Iterable[EntryLike]) -> ResultKey:
    """Return the key of an engine result (its components in query input order)."""
    return tuple((e.partition, e.offset) for e in entries)


def replay_events(query: QueryDef, lines: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Event]:
    """Return the events of a replay input: (stream, record) pairs in arrival order.

    As in `streamjoin replay` (semantics.md section 6), each stream is one partition (0) and a
    record's offset is its position among the stream's records; its timestamp is the field named by
    the input's `timestamp` (a replay has no Kafka timestamp, so that must not be null).
    """
    fields: dict[str, str | None] = {i.stream: i.timestamp for i in query.inputs}
    offsets: dict[str, int] = {}
    events: list[Event] = []
    for stream, record in lines:
        field = fields[stream]
        if field is None:
            raise ValueError(f"input {stream!r} takes the Kafka timestamp, which a replay does not have")
        if field not in record:
            raise ValueError(f"a record of {stream!r} has no timestamp field {field!r}: {dict(record)}")
        offset = offsets.get(stream, 0)
        offsets[stream] = offset + 1
        events.append(Event(stream, 0, offset, record[field], record))
    return events


def _check_events(query: QueryDef, events: Sequence[Event]) -> None:
    names = set(query.stream_names)
    seen: set[tuple[str, int, int]] = set()
    for i, e in enumerate(events):
        if e.stream not in names:
            raise ValueError(f"event {i}: stream {e.stream!r} is not an input of query {query.name!r}")
        key = (e.stream, e.partition, e.offset)
        if key in seen:
            raise ValueError(f"event {i}: duplicate (stream, partition, offset) {key}")
        seen.add(key)


def watermarks(
    query: QueryDef,
    events: Sequence[Event],
    *,
    partitions: Collection[tuple[str, int]] | None = None,
) -> list[float]:
    """Return the watermark just before each event arrives (semantics.md section 1).

    The watermark is the minimum over the query's input partitions of the largest timestamp seen
    there, minus `lateness`; a partition that has seen nothing holds it at -infinity; it never
    decreases. `partitions` is the set of (stream, partition); by default, the partitions seen so
    far, and every input holds the watermark at -infinity until it has seen a record.
    """
    _check_events(query, events)
    if partitions is not None:
        unnamed = {(e.stream, e.partition) for e in events} - set(partitions)
        if unnamed:
            raise ValueError(f"events come from partitions not in `partitions`: {sorted(unnamed)}")
    largest: dict[tuple[str, int], float] = {}
    result: list[float] = []
    mark = -math.inf
    for e in events:
        if partitions is None:
            waiting = set(query.stream_names) - {stream for stream, _ in largest}
            keys: Collection[tuple[str, int]] = () if waiting else list(largest)
        else:
            keys = partitions
        if keys and all(k in largest for k in keys):
            mark = max(mark, min(largest[k] for k in keys) - query.lateness)
        result.append(mark)
        key = (e.stream, e.partition)
        largest[key] = max(largest.get(key, -math.inf), e.ts)
    return result


def late_events(
    query: QueryDef,
    events: Sequence[Event],
    *,
    partitions: Collection[tuple[str, int]] | None = None,
) -> list[Event]:
    """Return the events whose timestamp is below the watermark when they arrive, in order."""
    marks = watermarks(query, events, partitions=partitions)
    return [e for e, mark in zip(events, marks, strict=True) if e.ts < mark]


def _value(operand: Operand, combo: Mapping[str, Event]) -> Any:
    if isinstance(operand, FieldRef):
        return combo[operand.stream].record.get(operand.field, _MISSING)
    return operand


def _holds(predicate: Predicate, combo: Mapping[str, Event]) -> bool:
    left = _value(predicate.left, combo)
    right = _value(predicate.right, combo)
    if left is _MISSING or right is _MISSING:
        return False
    try:
        return bool(_OPERATORS[predicate.op](left, right))
    except TypeError:
        return False


def _group(window: RowsWindow, event: Event) -> tuple[int, Any]:
    if window.partition_by is None:
        return (event.partition, None)
    return (event.partition, event.record.get(window.partition_by))


def _in_window(
    query: QueryDef, index: int, event: Event, t_max: float, stream_events: Sequence[Event]
) -> bool:
    window = query.inputs[index].window
    if window is None:
        return True
    if isinstance(window, RangeWindow):
        return t_max - event.ts < window.range if window.strict else t_max - event.ts <= window.range
    group = _group(window, event)
    newer = sum(
        1
        for other in stream_events
        if _group(window, other) == group
        and (other.ts, other.offset) > (event.ts, event.offset)
        and other.ts <= t_max
    )
    return newer < window.rows


def expected_results(
    query: QueryDef,
    events: Sequence[Event],
    *,
    partitions: Collection[tuple[str, int]] | None = None,
) -> Counter[ResultKey]:
    """Return every result of `query` over `events` (in arrival order), each counted once.

    Late events (see `late_events`; `partitions` as there) are left out: they neither join nor
    occupy a window. The answer is a `Counter` so that an engine's output, turned into a Counter
    of `result_key`s, can be compared with `==`: duplicates and misses both show up.
    """
    late = {(e.stream, e.partition, e.offset) for e in late_events(query, events, partitions=partitions)}
    names = query.stream_names
    per_stream: dict[str, list[Event]] = {name: [] for name in names}
    for e in events:
        if (e.stream, e.partition, e.offset) not in late:
            per_stream[e.stream].append(e)

    # Each predicate is checked once, as soon as every input it mentions has a component. A
    # predicate over one input only is therefore a filter on that input's candidates; the window
    # test below still counts every record of the input, filtered or not.
    checked_at: list[list[Predicate]] = [[] for _ in names]
    for p in query.where:
        checked_at[max(names.index(s) for s in p.streams)].append(p)
    # Each `within` pair likewise, once both of its inputs have a component.
    within_at: list[list[tuple[str, str, float]]] = [[] for _ in names]
    for pair in query.within:
        within_at[max(names.index(pair.left), names.index(pair.right))].append(
            (pair.left, pair.right, pair.bound)
        )

    results: Counter[ResultKey] = Counter()
    combo: dict[str, Event] = {}
    in_window: dict[tuple[int, int, int, float], bool] = {}  # (input, partition, offset, t_max)

    def inside(i: int, e: Event, t_max: float) -> bool:
        key = (i, e.partition, e.offset, t_max)
        if key not in in_window:
            in_window[key] = _in_window(query, i, e, t_max, per_stream[names[i]])
        return in_window[key]

    def extend(depth: int) -> None:
        if depth == len(names):
            t_max = max(e.ts for e in combo.values())
            if all(inside(i, combo[name], t_max) for i, name in enumerate(names)) and (
                query.filter is None or filter_holds(query.filter, {n: e.record for n, e in combo.items()})
            ):
                results[tuple((combo[name].partition, combo[name].offset) for name in names)] += 1
            return
        name = names[depth]
        for e in per_stream[name]:
            combo[name] = e
            if all(_holds(p, combo) for p in checked_at[depth]) and all(
                abs(combo[x].ts - combo[y].ts) <= w for x, y, w in within_at[depth]
            ):
                extend(depth + 1)
        combo.pop(name, None)

    extend(0)
    return results
