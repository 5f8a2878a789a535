"""Check the oracle against a second, differently written definition of the result set.

Golab's incremental view (docs/queries.md, "The result set", last paragraph, extended to disorder): order all
records by (ts, input, partition, offset); each result is produced by its youngest member k, from the
records before k that are in their windows as seen at k.ts. A rows window there is computed by sorting
the group's records with ts <= k.ts and keeping the last N, instead of counting newer records.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from hypothesis import given

from streamjoin.query.model import FieldRef, Operand, Predicate, QueryDef, RangeWindow
from streamjoin.testing import Event, ResultKey, expected_results

from .profiles import engine_settings
from .strategies import Case, cases

_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _operand(o: Operand, combo: dict[str, Event]) -> Any:
    return combo[o.stream].record[o.field] if isinstance(o, FieldRef) else o


def _holds(p: Predicate, combo: dict[str, Event]) -> bool:
    return bool(_OPS[p.op](_operand(p.left, combo), _operand(p.right, combo)))


def _window_at(query: QueryDef, stream: str, events: list[Event], now: float) -> set[tuple[int, int]]:
    """Return the (partition, offset) of the records in `stream`'s window as seen at `now`."""
    window = query.inputs[query.input_index(stream)].window
    mine = [e for e in events if e.stream == stream and e.ts <= now]
    if isinstance(window, RangeWindow):
        return {(e.partition, e.offset) for e in mine if now - e.ts <= window.range}
    groups: dict[Any, list[Event]] = {}
    for e in mine:
        key = (e.partition, e.record.get(window.partition_by) if window.partition_by else None)
        groups.setdefault(key, []).append(e)
    kept: set[tuple[int, int]] = set()
    for members in groups.values():
        members.sort(key=lambda e: (e.ts, e.offset))
        kept |= {(e.partition, e.offset) for e in members[-window.rows :]}
    return kept


def _incremental(query: QueryDef, events: list[Event]) -> Counter[ResultKey]:
    names = query.stream_names
    rank = {
        (e.stream, e.partition, e.offset): (e.ts, names.index(e.stream), e.partition, e.offset)
        for e in events
    }
    results: Counter[ResultKey] = Counter()
    for k in events:
        before = {s: [e for e in events if e.stream == s and rank[_id(e)] < rank[_id(k)]] for s in names}
        before[k.stream] = [k]
        windows = {s: _window_at(query, s, events, k.ts) for s in names}
        for members in itertools.product(*(before[s] for s in names)):
            combo = dict(zip(names, members, strict=True))
            if all((m.partition, m.offset) in windows[m.stream] for m in members) and all(
                _holds(p, combo) for p in query.where
            ):
                results[tuple((m.partition, m.offset) for m in members)] += 1
    return results


def _id(e: Event) -> tuple[str, int, int]:
    return (e.stream, e.partition, e.offset)


@engine_settings(200)
@given(cases(n=(2, 3)))
def test_oracle_equals_the_incremental_definition(case: Case) -> None:
    events = list(case.events)
    assert expected_results(case.query, events) == _incremental(case.query, events), case.describe()
