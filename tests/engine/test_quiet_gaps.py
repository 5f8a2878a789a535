"""Quiet periods lose nothing (docs/queries.md, "Idle timeout"): bursts separated by idle gaps.

A joiner never calls `finish()`. Here a random case is cut into two bursts; between them, and
after the second, every input partition goes idle one after another (`set_idle`, as the joiner's
idle timeout does), with `advance()` after each. The second burst is moved after everything of the
first, keeping its own disorder between partitions. Under every algorithm, evaluation and
expiration mode and every window model of `test_window_models` (range, strict, rows, rows per key,
`within` pairs), and with the case's lateness or a much larger one:

- once the first gap is quiet, the results of the first burst have all been emitted (the idle
  flush, whatever the lateness);
- no record of the second burst is late (each partition holds the watermark again when input
  resumes), and after the second gap the results equal the oracle's over every event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.engine import MultiJoin
from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import Event, ResultKey, expected_results, late_events, result_key

from .harness import diff, failed, focused
from .profiles import engine_settings
from .strategies import Case, reproducer
from .test_window_models import EVERY_MODE, constrained

_FOCUS = "quiet-gaps"


def _after(burst: Sequence[Event], previous: Sequence[Event], gap: int) -> list[Event]:
    """Return `burst` moved to start `gap` after the newest timestamp of `previous` (plus one)."""
    if not burst or not previous:
        return list(burst)
    shift = max(e.ts for e in previous) + 1 + gap - min(e.ts for e in burst)
    return [replace(e, ts=e.ts + shift, record={**e.record, "ts": e.ts + shift}) for e in burst]


def _quiet(engine: MultiJoin, order: Iterable[tuple[str, int]], got: Counter[ResultKey]) -> None:
    """Let every partition's idle timeout pass, one after another."""
    for stream, partition in order:
        engine.set_idle(stream, partition, True)
        got.update(map(result_key, engine.advance()))


@engine_settings(25)
@given(case=constrained(), data=st.data())
def test_bursts_separated_by_quiet_gaps_equal_the_oracle(case: Case, data: st.DataObject) -> None:
    events = case.events
    split = data.draw(st.integers(min(1, len(events)), max(1, len(events) - 1)), label="split")
    gap = data.draw(st.integers(0, 60), label="gap")
    first = list(events[:split])
    second = _after(events[split:], first, gap)
    raw = dict(case.raw)
    if data.draw(st.booleans(), label="large lateness"):
        raw["lateness"] = 1_000  # holds everything back until the inputs go quiet
    base = parse_query(raw)
    every = [*first, *second]
    assert not late_events(base, every), "the case must have no late record"
    want_first = expected_results(base, first)
    want = expected_results(base, every)
    partitions = {s: sorted({0} | {e.partition for e in events if e.stream == s}) for s in base.stream_names}
    keys = [(s, p) for s, parts in partitions.items() for p in parts]
    orders = [data.draw(st.permutations(keys), label="idle order") for _ in range(2)]
    advance_after = data.draw(st.sets(st.integers(0, max(0, len(every) - 1))), label="advance_after")
    for combo in focused(_FOCUS, EVERY_MODE):
        query = parse_query({**raw, **combo.fields()})
        problem = _run(query, first, second, partitions, orders, advance_after, want_first, want)
        if problem is not None:
            failed(_FOCUS, combo)
            raise AssertionError(
                f"combination {combo}: {problem}\nsecond burst from event {split}, idle orders {orders}, "
                f"advance() after {sorted(advance_after)}\n{reproducer(raw, every)}"
            )


def _run(
    query: QueryDef,
    first: Sequence[Event],
    second: Sequence[Event],
    partitions: Mapping[str, Sequence[int]],
    orders: Sequence[Sequence[tuple[str, int]]],
    advance_after: set[int],
    want_first: Counter[ResultKey],
    want: Counter[ResultKey],
) -> str | None:
    """Run the engine over both bursts and gaps; return what went wrong, or None."""
    engine = MultiJoin(query, partitions=partitions)
    names = query.stream_names
    got: Counter[ResultKey] = Counter()
    late: list[Event] = []
    for i, e in enumerate([*first, *second]):
        if i == len(first):
            _quiet(engine, orders[0], got)
            if got != want_first or engine.buffered:
                return (
                    f"after the first quiet gap ({engine.buffered} records still held): "
                    f"{diff(want_first, got, names, first)}"
                )
        if not engine.add(e.stream, dict(e.record), ts=e.ts, partition=e.partition, offset=e.offset):
            late.append(e)
        if i in advance_after:
            got.update(map(result_key, engine.advance()))
    _quiet(engine, orders[1], got)
    if late:
        return f"records refused as late: {late}"
    if got != want or engine.buffered:
        missing = diff(want, got, names, [*first, *second])
        return f"after the second quiet gap ({engine.buffered} records still held): {missing}"
    return None
