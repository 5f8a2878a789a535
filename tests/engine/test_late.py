"""Late records (docs/queries.md): rejected by `add`, counted, never joined.

With disorder beyond `lateness` and `advance()` at random points (lateness is judged against the
watermark when the record arrives, not at the last `advance`), the engine rejects exactly the
oracle's late events, counts them per input, and returns the oracle's results over the others.
The engine and the oracle are told the same input partitions: every (stream, partition) the case
uses, and partition 0 for an input without records.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, target
from hypothesis import strategies as st

from streamjoin.query import parse_query
from streamjoin.testing import expected_results, late_events

from .harness import COMBINATIONS, diff, run_engine
from .profiles import engine_settings
from .strategies import Case, cases


@engine_settings(60)
@given(case=cases(n=(2, 3), late=True), data=st.data())
def test_late_records_rejected_counted_and_not_joined(case: Case, data: st.DataObject) -> None:
    advance_after = data.draw(st.sets(st.integers(0, max(0, len(case.events) - 1))), label="advance_after")
    names = case.query.stream_names
    used = {s: sorted({e.partition for e in case.events if e.stream == s}) or [0] for s in names}
    pairs = [(s, p) for s, ps in used.items() for p in ps]
    late = late_events(case.query, case.events, partitions=pairs)
    late_ids = [i for i, e in enumerate(case.events) if e in late]
    target(len(late_ids), label="late records")
    want = expected_results(case.query, case.events, partitions=pairs)
    per_stream = Counter(e.stream for e in late)
    for combo in COMBINATIONS:
        query = parse_query({**case.raw, **combo.fields()})
        run = run_engine(query, case.events, advance_after=advance_after, partitions=used)
        assert run.engine is not None
        context = f"{combo}; advance() after {sorted(advance_after)}\n{case.describe()}"
        assert run.rejected == late_ids, f"rejected {run.rejected}, late {late_ids}: {context}"
        assert {s: run.engine.stats[s].late for s in names} == {s: per_stream[s] for s in names}, context
        assert run.results == want, f"{diff(want, run.results, names, case.events)}\n{context}"
