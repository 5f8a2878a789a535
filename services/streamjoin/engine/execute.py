"""The join loops: COMPUTEHASHJOIN / COMPUTEJOIN (origin first) and GENERALCOMPUTEJOIN.

Both build results breadth-first: a list of partial results (tuples of entries in local-order
positions) is extended one window at a time. When a window is probed with the origin record's value,
its admitted bucket is the same for every partial result, so the extension is a plain cross product.

Which candidates are admitted is the window model's (`admission.py`): each window's runtime carries
its `admit` closure, specialised once for the mode, so the loops never test a mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

from streamjoin.engine.admission import WindowRuntime
from streamjoin.engine.edges import Partial
from streamjoin.engine.entry import Entry
from streamjoin.engine.program import Program, Step
from streamjoin.engine.stats import WindowStats
from streamjoin.engine.window import WindowStore

__all__ = [
    "CrossStep",
    "ExactStep",
    "run_cross_product",
    "run_exact_cross",
    "run_general",
    "run_origin_first",
]


def _candidates(step_table: WindowStore, field: str | None, value: Any) -> Sequence[Entry] | Iterable[Entry]:
    stats = step_table.stats
    stats.probes += 1
    if field is None:
        stats.comparisons += len(step_table)
        return step_table.scan()
    bucket = step_table.bucket(field, value)
    stats.comparisons += len(bucket)
    return bucket


# A window of a cross-product program: its runtime; its hash index when it maps exact values to
# buckets (probed with one dict lookup), else None; the indexed field (None: scan); the origin's
# field whose value is probed; whether candidates need admission checks in this mode.
CrossStep = tuple[WindowRuntime, "Mapping[Any, Sequence[Entry]] | None", "str | None", "str | None", bool]


def run_cross_product(
    k: Entry, steps: Sequence[CrossStep], query_slots: Sequence[int], check_seq: bool
) -> list[Partial]:
    """Return the results whose youngest member is `k` when they are a plain cross product.

    Every window is probed with `k`'s own value (or scanned) and nothing is checked in the loop, so
    the admitted candidates of each window combine freely: itertools.product builds the result
    tuples in C, directly in query input order. Windows are probed in the local order, so an empty
    window found early ends the work early: that is what the join order still decides here.
    """
    krecord = k.record
    slots: list[Sequence[Entry]] = [(k,)]
    for w, index, field, src, needs_admit in steps:
        table = w.table
        candidates: Any
        if index is not None:
            candidates = index.get(krecord[src])  # type: ignore[index]
            if candidates is None:
                table.stats.probes += 1
                return []
            size = len(candidates)
        elif field is None:
            candidates = table.scan()
            size = len(table)
        else:
            candidates = table.bucket(field, krecord[src])  # type: ignore[index]
            size = len(candidates)
        stats = table.stats
        stats.probes += 1
        stats.comparisons += size
        if needs_admit or check_seq:
            candidates = w.admit(candidates, k, check_seq)
            if not candidates:
                return []
        slots.append(candidates)
    return list(product(*[slots[i] for i in query_slots]))


# A window of a cross-product program probed in an exact-value index with nothing to admit (eager
# evaluation and expiration, range window): its statistics, its live index, the origin's field.
ExactStep = tuple[WindowStats, "Mapping[Any, Sequence[Entry]]", str]


def run_exact_cross(
    k: Entry,
    steps: Sequence[ExactStep],
    query_slots: Sequence[int] | None,
    check_seq: bool,
    results: list[Partial],
) -> int:
    """Append the results whose youngest member is `k` to `results`; return how many.

    `run_cross_product` for its most common case: every window is a bucket of an exact-value index
    and only the release order may need checking. A bucket holds its entries in release order, so
    only a bucket whose newest entry was released after `k` (an equal timestamp) is filtered.
    `query_slots` is None when the local order is the query order.
    """
    krecord = k.record
    slots: list[Sequence[Entry]] = [(k,)]
    for stats, index, src in steps:
        bucket = index.get(krecord[src])
        stats.probes += 1
        if bucket is None:
            return 0
        stats.comparisons += len(bucket)
        if check_seq:
            kseq = k.seq
            if bucket[-1].seq >= kseq:
                if bucket[0].seq >= kseq:
                    return 0
                bucket = [u for u in bucket if u.seq < kseq]
        slots.append(bucket)
    before = len(results)
    results.extend(product(*slots) if query_slots is None else product(*[slots[i] for i in query_slots]))
    return len(results) - before


def run_origin_first(
    k: Entry, program: Program, windows: dict[str, WindowRuntime], check_seq: bool
) -> list[Partial]:
    """Return the results whose youngest member is `k`, visiting windows in the local order.

    The results come in query input order when `program.cross_product` holds, else in local order.
    """
    krecord = k.record
    partials: list[Partial] = [(k,)]
    for step in program.steps[1:]:
        w = windows[step.stream]
        check = step.check
        pos = step.probe_pos
        if pos == 0 or pos is None:  # one candidate list for every partial result
            value = krecord[step.probe_src_field] if pos == 0 else None  # type: ignore[index]
            valid = w.admit(_candidates(w.table, step.probe_field, value), k, check_seq)
            if not valid:
                return []
            if check is None:
                partials = [p + (u,) for p in partials for u in valid]
            else:
                partials = [p + (u,) for p in partials for u in valid if check(p, u)]
        else:
            partials = _extend_probed(partials, step, w, 0, check_seq)
        if not partials:
            return partials
    return partials


def run_general(batch: Sequence[Entry], program: Program, windows: dict[str, WindowRuntime]) -> list[Partial]:
    """Return the results whose youngest member is one of `batch` (GENERAL LAZY, origin not first).

    The loops above the origin bind windows by attributes only (no new record is known yet); the
    origin's loop admits each bound record against the new record `k`, and the loops below it admit
    candidates against the `k` of their partial result.
    """
    p_origin = program.origin_pos
    partials: list[Partial] = [()]
    for step in program.steps[:p_origin]:
        w = windows[step.stream]
        partials = _extend_unanchored(partials, step.probe_pos, step.probe_src_field, step.probe_field, w)
        if step.check is not None:
            above_check = step.check
            partials = [p for p in partials if above_check(p[:-1], p[-1])]
        if not partials:
            return []
    partials = _bind_origin(partials, batch, program, windows)
    for step in program.steps[p_origin + 1 :]:
        partials = _extend_probed(partials, step, windows[step.stream], p_origin, True)
        if not partials:
            return []
    return partials


def _extend_probed(
    partials: list[Partial], step: Step, w: WindowRuntime, origin_pos: int, check_seq: bool
) -> list[Partial]:
    """Extend each partial result by the candidates of `step`'s window it joins with.

    Candidates come from the bucket of the partial's probed value (or the whole window) and are
    admitted against the partial's new record (at `origin_pos`); each (new record, value) pair is
    looked up and admitted once.
    """
    check, pos, src, field = step.check, step.probe_pos, step.probe_src_field, step.probe_field
    admitted: dict[tuple[int, Any], Sequence[Entry]] = {}
    extended: list[Partial] = []
    for p in partials:
        k = p[origin_pos]
        value = p[pos].record[src] if pos is not None else None  # type: ignore[index]
        valid = admitted.get((k.seq, value))
        if valid is None:
            valid = admitted[(k.seq, value)] = w.admit(_candidates(w.table, field, value), k, check_seq)
        if check is None:
            extended.extend([p + (u,) for u in valid])
        else:
            extended.extend([p + (u,) for u in valid if check(p, u)])
    return extended


def _extend_unanchored(
    partials: list[Partial], pos: int | None, src: str | None, field: str | None, w: WindowRuntime
) -> list[Partial]:
    if pos is None:
        held = [u for u in _candidates(w.table, None, None) if u.passes]
        return [p + (u,) for p in partials for u in held]
    extended: list[Partial] = []
    for p in partials:
        bucket = _candidates(w.table, field, p[pos].record[src])  # type: ignore[index]
        extended.extend([p + (u,) for u in bucket if u.passes])
    return extended


def _bind_origin(
    partials: list[Partial], batch: Sequence[Entry], program: Program, windows: dict[str, WindowRuntime]
) -> list[Partial]:
    step = program.steps[program.origin_pos]
    above = [windows[s] for s in program.order[: program.origin_pos]]
    by_value: dict[Any, list[Entry]] = {}
    if step.probe_pos is not None:
        for k in batch:
            by_value.setdefault(k.record[step.probe_field], []).append(k)  # type: ignore[index]
    check = step.check
    bound: list[Partial] = []
    for p in partials:
        if step.probe_pos is None:
            ks: Sequence[Entry] = batch
        else:
            ks = by_value.get(p[step.probe_pos].record[step.probe_src_field], ())  # type: ignore[index]
        for k in ks:
            if check is not None and not check(p, k):
                continue
            if all(w.admits(u, k) for u, w in zip(p, above, strict=True)):
                bound.append(p + (k,))
    return bound
