"""Compile a query and a local join order into the steps the join loop executes.

A `Program` is one origin stream's nested loop, Golab-style: position `origin_pos` holds the new
records (the batch), every other position binds one window. Each `Step` says where its candidates
come from (one hash bucket probed with a value of an already-bound record, or the whole window) and
which predicates must be checked in the loop (theta predicates always; equalities not answered
exactly by the probe). Compiling happens once per plan, never per record.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamjoin.engine.admission import Admission
from streamjoin.engine.algorithm import JoinAlgorithm
from streamjoin.engine.edges import JoinEdge, PairCheck, Partial, closed_edges, equality_classes
from streamjoin.engine.entry import Entry
from streamjoin.query.expr import Call, Expr, split_filter, streams_of
from streamjoin.query.expr_eval import compile_predicate
from streamjoin.query.model import FieldRef, Predicate, QueryDef
from streamjoin.query.predicates import MISSING, OPERATORS, compare

__all__ = ["Program", "RecordFilter", "Step", "compile_filters", "compile_program"]


RecordFilter = Callable[[Mapping[str, Any]], bool]


def _operand(value: Any) -> Callable[[Mapping[str, Any]], Any]:
    if isinstance(value, FieldRef):
        field = value.field
        return lambda record: record.get(field, MISSING)
    return lambda record: value


def compile_filters(query: QueryDef) -> dict[str, RecordFilter | None]:
    """Return, per input, a test for the predicates that mention that input only (or None)."""
    per_stream: dict[str, list[Predicate]] = {s: [] for s in query.stream_names}
    for p in query.where:
        streams = p.streams
        if len(streams) == 1:
            per_stream[next(iter(streams))].append(p)
    # Equalities through other inputs can tie two fields of one input (b.x = a.x AND a.x = b.y
    # imply b.x = b.y): that is a filter on the input, and the join loop relies on it holding.
    for members in equality_classes(query):
        by_stream: dict[str, list[str]] = {}
        for stream, field in members:
            by_stream.setdefault(stream, []).append(field)
        for stream, fields in by_stream.items():
            per_stream[stream].extend(
                Predicate(FieldRef(stream, fields[0]), "=", FieldRef(stream, f)) for f in fields[1:]
            )
    filters: dict[str, RecordFilter | None] = {}
    single = split_filter(query.filter, query.stream_names)[0]  # the `filter` terms of one input
    for stream, preds in per_stream.items():
        if not preds and stream not in single:
            filters[stream] = None
            continue
        tests = [(_operand(p.left), p.op, _operand(p.right)) for p in preds]
        extra = compile_predicate(single[stream], {stream: 0}) if stream in single else None

        def passes(record: Mapping[str, Any], tests: list[Any] = tests, extra: Any = extra) -> bool:
            # A missing field or incomparable values make a predicate false, as everywhere (`compare`).
            if not all(compare(op, left(record), right(record)) for left, op, right in tests):
                return False
            return extra is None or bool(extra((record,)))

        filters[stream] = passes
    return filters


def _with_residual(check: PairCheck | None, terms: Sequence[Expr], bound: Sequence[str]) -> PairCheck:
    """Add to `check` the `filter` terms over several inputs that the step binding `bound[-1]` completes.

    The terms see the partial result's records by local position; they run in the loop like the
    theta predicates, after the equi-joins bound the candidates (never below a window).
    """
    test = compile_predicate(
        terms[0] if len(terms) == 1 else Call("and", tuple(terms)), {s: i for i, s in enumerate(bound)}
    )

    def residual(p: Partial, u: Entry) -> bool:
        if check is not None and not check(p, u):
            return False
        records = [e.record for e in p]
        records.append(u.record)
        return test(records)

    return residual


def _pair_check(specs: list[tuple[int, str, Callable[[Any, Any], bool], str, bool]]) -> PairCheck:
    """Build the in-loop test of a candidate `u` against the partial result `p`.

    Each spec is (position of the other record in `p`, its field, operator, `u`'s field, whether
    `u` is the left operand).
    """

    def check(p: Partial, u: Entry) -> bool:
        record = u.record
        try:
            for pos, ofield, op, ufield, u_left in specs:
                other = p[pos].record.get(ofield)
                mine = record.get(ufield)
                if not (op(mine, other) if u_left else op(other, mine)):
                    return False
        except TypeError:
            return False
        return True

    return check


def _combine(check: PairCheck | None, extra: Sequence[PairCheck]) -> PairCheck | None:
    """Return one check doing `check` and every check of `extra` (None when there is none)."""
    checks = ([check] if check is not None else []) + list(extra)
    if len(checks) <= 1:
        return checks[0] if checks else None
    return lambda p, u: all(c(p, u) for c in checks)


@dataclass(frozen=True, slots=True)
class Step:
    """Bind the window of `stream` at position `position` of the local order."""

    stream: str
    position: int
    probe_pos: int | None  # position of the bound record whose value is probed; None = scan
    probe_src_field: str | None  # that record's field
    probe_field: str | None  # this window's indexed field
    check: PairCheck | None  # predicates checked in the loop, None when there are none


@dataclass(frozen=True, slots=True)
class Program:
    """One origin stream's local order, compiled."""

    origin: str
    order: tuple[str, ...]
    origin_pos: int
    steps: tuple[Step, ...]  # every position but origin_pos, in loop order (origin step included)
    to_query_order: Callable[[Partial], Partial] | None  # None when the local order is query order
    # When every window is probed with the origin's value (or scanned) and nothing is checked in
    # the loop, the results are the cross product of the admitted candidates: built in C by
    # itertools.product, directly in query order (`query_slots[i]` = local position of input i).
    cross_product: bool
    query_slots: tuple[int, ...]


def compile_program(
    query: QueryDef,
    order: Sequence[str],
    origin: str,
    *,
    algorithm: JoinAlgorithm,
    admission: Admission,
    exact_buckets: Mapping[str, bool],
) -> Program:
    """Compile the nested loop for new records of `origin` visiting windows in `order`.

    `algorithm` decides which equality each step probes in an index (None: scan the window);
    `admission` adds the window model's checks between the candidate and bound records (none for
    sliding windows). `exact_buckets[s]` is False when window `s` hashes values into fewer buckets,
    so its probe equality is re-checked in the loop.
    """
    order = tuple(order)
    origin_pos = order.index(origin)
    edges = closed_edges(query)
    class_of = {m: i for i, members in enumerate(equality_classes(query)) for m in members}
    indexed = algorithm.index_fields(query)
    multi_terms = split_filter(query.filter, query.stream_names)[1]
    steps = []
    for m, stream in enumerate(order):
        position_of = {s: i for i, s in enumerate(order[:m])}
        mine = [e for e in edges if stream in (e.left, e.right) and e.other(stream)[1] in position_of]
        # Bound records of one equality class already equal each other: one equality per class
        # to this stream is enough, the others are implied. Prefer the origin's (see below).
        mine.sort(key=lambda e: (e.other(stream)[1] != origin, position_of[e.other(stream)[1]]))
        seen_classes: set[int] = set()
        needed: list[JoinEdge] = []
        for e in mine:
            if e.op == "=":
                cls = class_of[(stream, e.other(stream)[0])]
                if cls in seen_classes:
                    continue
                seen_classes.add(cls)
            needed.append(e)
        # `needed` lists the origin's predicates first: its bucket is the same for every partial.
        probe = algorithm.probe_edge(stream, needed, indexed[stream])
        specs = []
        for e in needed:
            if e is probe and exact_buckets.get(stream, True):
                continue
            ufield, other, ofield = e.other(stream)
            specs.append((position_of[other], ofield, OPERATORS[e.op], ufield, stream == e.left))
        check = _combine(_pair_check(specs) if specs else None, admission.pair_checks(stream, position_of))
        bound = set(order[: m + 1])
        residual = [t for t in multi_terms if stream in streams_of(t) and streams_of(t) <= bound]
        if residual:  # the query's `filter` terms over several inputs, once all of them are bound
            check = _with_residual(check, residual, order[: m + 1])
        if probe is not None:
            pfield, pother, pofield = probe.other(stream)
            step = Step(stream, m, position_of[pother], pofield, pfield, check)
        else:
            step = Step(stream, m, None, None, None, check)
        steps.append(step)
    names = query.stream_names
    perm = [order.index(s) for s in names]
    to_query: Callable[[Partial], Partial] | None = None
    if perm != list(range(len(names))):
        to_query = operator.itemgetter(*perm)
    cross = origin_pos == 0 and all(st.check is None and st.probe_pos in (0, None) for st in steps[1:])
    return Program(origin, order, origin_pos, tuple(steps), to_query, cross, tuple(perm))
