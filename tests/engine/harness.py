"""Drive `MultiJoin` over a case's events and compare its results with the oracle's.

`COMBINATIONS` is every (evaluation, expiration, algorithm) of issue #3; `orders_for` adds the join
orders. `check_all` runs one case under all of them, so one Hypothesis example covers every
combination, and fails with the failing combination and a minimal diff (missing and extra or
duplicated results, with the components' streams, partitions, offsets and timestamps).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamjoin.engine import JoinPlan, MultiJoin
from streamjoin.query import QueryDef, RowsWindow, parse_query
from streamjoin.testing import Event, ResultKey, expected_results, result_key

from .strategies import reproducer

__all__ = [
    "ALGORITHMS",
    "COMBINATIONS",
    "EVALUATIONS",
    "EXPIRATIONS",
    "Combination",
    "Run",
    "check_all",
    "diff",
    "failed",
    "focused",
    "orders_for",
    "run_engine",
]

EVALUATIONS: tuple[dict[str, Any], ...] = (
    {"mode": "eager"},
    {"mode": "lazy", "every": 1},
    {"mode": "lazy", "every": 7},
    {"mode": "lazy", "every": 1000},
)
EXPIRATIONS: tuple[dict[str, Any], ...] = (
    {"mode": "eager"},
    {"mode": "lazy", "every": 1},
    {"mode": "lazy", "every": 7},
)
ALGORITHMS = ("hash", "nlj")


@dataclass(frozen=True)
class Combination:
    """One way of running a query: the query fields it overrides."""

    evaluation: dict[str, Any]
    expiration: dict[str, Any]
    algorithm: str
    order: str | tuple[str, ...] = "auto"

    def fields(self) -> dict[str, Any]:
        """Return the query JSON fields of this combination."""
        order = self.order if self.order == "auto" else list(self.order)
        return {
            "evaluation": self.evaluation,
            "expiration": self.expiration,
            "algorithm": self.algorithm,
            "order": order,
        }

    def __str__(self) -> str:
        def mode(m: dict[str, Any]) -> str:
            return f"{m['mode']}/{m['every']}" if m.get("every") is not None else str(m["mode"])

        order = self.order if self.order == "auto" else ",".join(self.order)
        return (
            f"evaluation={mode(self.evaluation)} expiration={mode(self.expiration)} "
            f"algorithm={self.algorithm} order={order}"
        )


COMBINATIONS: tuple[Combination, ...] = tuple(
    Combination(ev, ex, alg) for ev, ex, alg in itertools.product(EVALUATIONS, EXPIRATIONS, ALGORITHMS)
)


def orders_for(names: Sequence[str], rnd: random.Random, sampled: int = 3) -> list[str | tuple[str, ...]]:
    """Return "auto" and every permutation of `names` (n <= 4), or `sampled` random ones (n = 5)."""
    orders: list[str | tuple[str, ...]] = ["auto"]
    if len(names) <= 4:
        orders += list(itertools.permutations(names))
    else:
        orders += [tuple(rnd.sample(list(names), len(names))) for _ in range(sampled)]
    return orders


@dataclass
class Run:
    """What one engine run produced."""

    results: Counter[ResultKey] = field(default_factory=Counter)
    rejected: list[int] = field(default_factory=list)
    engine: MultiJoin | None = None


def run_engine(
    query: QueryDef,
    events: Sequence[Event],
    *,
    advance_after: Collection[int] = (),
    plan: JoinPlan | None = None,
    plans: Mapping[int, JoinPlan] | None = None,
    partitions: Mapping[str, Iterable[int]] | None = None,
) -> Run:
    """Feed `events` in order, `advance()` after the given indices, set plans before them, `finish()`.

    `plan` is the plan the engine starts with; `plans[i]` is set just before event i is added.

    Every result is checked for shape: one entry per input, in query order, carrying the record and
    timestamp of the event it stands for.
    """
    engine = MultiJoin(query, plan, partitions=partitions)
    by_key = {(e.stream, e.partition, e.offset): e for e in events}
    names = query.stream_names
    run = Run(engine=engine)
    out: list[Any] = []
    for i, e in enumerate(events):
        if plans and i in plans:
            engine.set_plan(plans[i])
        if not engine.add(e.stream, dict(e.record), ts=e.ts, partition=e.partition, offset=e.offset):
            run.rejected.append(i)
        if i in advance_after:
            out.extend(engine.advance())
    out.extend(engine.finish())
    for r in out:
        assert len(r) == len(names), f"result {r!r} does not have one entry per input"
        for pos, entry in enumerate(r):
            event = by_key.get((names[pos], entry.partition, entry.offset))
            assert entry.input in (pos, names[pos]) and event is not None, (
                f"entry {entry!r} at position {pos}"
            )
            assert entry.ts == event.ts and dict(entry.record) == dict(event.record), f"entry {entry!r}"
        run.results[result_key(r)] += 1
    _check_stats(engine, query, events, run, len(out))
    return run


def _check_stats(engine: MultiJoin, query: QueryDef, events: Sequence[Event], run: Run, emitted: int) -> None:
    """Check the per-window statistics add up after `finish()` (docs/engine.md, Statistics)."""
    stats = engine.stats
    assert sum(s.results for s in stats.values()) == emitted, "stats results != results emitted"
    rejected = Counter(events[i].stream for i in run.rejected)
    for name in query.stream_names:
        s = stats[name]
        arrived = sum(1 for e in events if e.stream == name)
        assert s.arrivals == arrived and s.late == rejected[name], f"{name}: {s}"
        assert s.inserts == s.records + s.expirations, f"{name}: inserts != records + expirations: {s}"
        accepted = arrived - s.late
        assert s.inserts + (s.filtered if _is_range(query, name) else 0) == accepted, (
            f"{name}: every accepted record is inserted by finish() (range windows: unless filtered): {s}"
        )


def _is_range(query: QueryDef, stream: str) -> bool:
    """Return True unless the input has a count window (a filtered record is then not inserted)."""
    return not isinstance(query.inputs[query.input_index(stream)].window, RowsWindow)


def _describe(key: ResultKey, names: Sequence[str], events: Sequence[Event]) -> str:
    ts = {(e.stream, e.partition, e.offset): e.ts for e in events}
    return " ".join(f"{s}[p{p} o{o} ts={ts.get((s, p, o))}]" for s, (p, o) in zip(names, key, strict=True))


def diff(
    want: Counter[ResultKey],
    got: Counter[ResultKey],
    names: Sequence[str],
    events: Sequence[Event],
    limit: int = 8,
) -> str:
    """Return a short description of the results missing from `got` and extra (or duplicated) in it."""
    missing = want - got
    extra = got - want
    lines = [f"expected {sum(want.values())} results, got {sum(got.values())}"]
    for title, part in (("missing", missing), ("extra or duplicated", extra)):
        if part:
            lines.append(f"  {title} ({sum(part.values())}):")
            for key, n in sorted(part.items())[:limit]:
                lines.append(f"    {_describe(key, names, events)}" + (f" x{n}" if n > 1 else ""))
    return "\n".join(lines)


_failing: dict[str, Combination] = {}  # per test: the combination that failed, for shrinking


def focused(focus: str, combinations: Iterable[Combination]) -> list[Combination]:
    """Return `combinations`, or only the one that failed last in the test named `focus`.

    Once a test has failed, Hypothesis reruns it many times to shrink the case; running only the
    failing combination then makes shrinking take seconds instead of minutes.
    """
    todo = list(combinations)
    if focus in _failing and _failing[focus] in todo:
        return [_failing[focus]]
    return todo


def failed(focus: str, combination: Combination) -> None:
    """Remember that `combination` failed in the test named `focus` (see `focused`)."""
    _failing[focus] = combination


def check_all(
    raw: Mapping[str, Any],
    events: Sequence[Event],
    combinations: Iterable[Combination],
    *,
    focus: str,
    advance_after: Collection[int] = (),
    plan: JoinPlan | None = None,
    plans: Mapping[int, JoinPlan] | None = None,
    want: Counter[ResultKey] | None = None,
) -> int:
    """Run every combination and assert each equals the oracle; return how many ran.

    Stops at the first combination that differs. Once a test (named by `focus`) has failed,
    Hypothesis shrinks the case by rerunning it many times: from then on only the failing
    combination is run, so shrinking takes seconds instead of minutes.
    """
    base = parse_query(dict(raw))
    if want is None:
        want = expected_results(base, events)
    todo = focused(focus, combinations)
    for ran, combo in enumerate(todo, 1):
        query = parse_query({**raw, **combo.fields()})
        try:
            run = run_engine(query, events, advance_after=advance_after, plan=plan, plans=plans)
        except AssertionError as exc:
            message = f"malformed results or statistics: {exc}"
        else:
            if run.results == want and not run.rejected:
                continue
            message = diff(want, run.results, query.stream_names, events)
            if run.rejected:
                message = f"add() returned False for events {run.rejected} (none is late)\n{message}"
        failed(focus, combo)
        raise AssertionError(
            f"combination {combo} differs from the oracle (checked {ran} of {len(todo)}):\n{message}\n"
            f"advance() after events {sorted(advance_after)}; initial plan {plan}; "
            f"plan changes {dict(sorted((plans or {}).items()))}\n"
            f"query and events (partition/offset explicit):\n{reproducer(raw, events)}"
        )
    return len(todo)
