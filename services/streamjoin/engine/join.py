"""`JoinRunner`: a query's windows and compiled programs, and how one record or a batch is joined.

Built once per engine from the strategies chosen for the query (`JoinAlgorithm`, `Admission`) and
recompiled on every plan switch (`compile`). The schedules (`schedule.py`) decide *when* to join and
call `join_one` / `join_batch`; the eager schedule also reads `exact_cross` and `own` directly, so
its per-record path has no call it does not need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streamjoin.engine.admission import Admission, Holding, WindowRuntime
from streamjoin.engine.algorithm import JoinAlgorithm
from streamjoin.engine.edges import Partial
from streamjoin.engine.entry import Entry
from streamjoin.engine.execute import (
    CrossStep,
    ExactStep,
    run_cross_product,
    run_general,
    run_origin_first,
)
from streamjoin.engine.plan import JoinPlan
from streamjoin.engine.program import Program, RecordFilter, compile_program
from streamjoin.engine.window import StoreFactory, WindowStore
from streamjoin.query.model import QueryDef

__all__ = ["ExactCross", "JoinRunner", "Result"]

Result = Partial  # one entry per input, in query input order

# The eager joins' common case (`run_exact_cross`): every window probed in an exact-value index,
# nothing to admit. Per input: its steps, and the query slots (None: identity).
ExactCross = tuple[Sequence[ExactStep], "tuple[int, ...] | None"]


class JoinRunner:
    """Hold one query's windows and programs; join records as the youngest members of results."""

    def __init__(
        self,
        query: QueryDef,
        algorithm: JoinAlgorithm,
        admission: Admission,
        holding: Holding,
        filters: Mapping[str, RecordFilter | None],
        store_factory: StoreFactory,
        buckets: Mapping[str, int],
    ) -> None:
        self.query = query
        self.names = query.stream_names
        self._index = {s: i for i, s in enumerate(self.names)}
        self._algorithm = algorithm
        self._admission = admission
        self._exact = {s: s not in buckets for s in self.names}
        fields = algorithm.index_fields(query)
        self.windows: dict[str, WindowRuntime] = {}
        for inp in query.inputs:
            table = store_factory(admission.store_input(inp), fields[inp.stream], buckets.get(inp.stream))
            filtered = filters[inp.stream] is not None and admission.keeps_filtered(inp)
            self.windows[inp.stream] = admission.runtime(inp, table, holding, filtered)
        self.tables: list[WindowStore] = [self.windows[s].table for s in self.names]
        # Per input: is a record still in its own window at its timestamp (None: always).
        self.own = [self.windows[s].own for s in self.names]
        self.programs: dict[str, Program] = {}
        self.by_input: list[Program] = []
        self.cross: list[Sequence[CrossStep] | None] = []
        self.exact_cross: list[ExactCross | None] = []

    def compile(self, plan: JoinPlan) -> None:
        """Compile every origin's program for `plan` (once per plan, never per record)."""
        self.programs = {
            origin: compile_program(
                self.query,
                order,
                origin,
                algorithm=self._algorithm,
                admission=self._admission,
                exact_buckets=self._exact,
            )
            for origin, order in plan.local_orders.items()
        }
        self.by_input = [self.programs[s] for s in self.names]
        self.cross = []
        self.exact_cross = []
        for program in self.by_input:
            cross: list[CrossStep] | None = None
            exact: list[ExactStep] | None = None
            if program.cross_product:
                cross = []
                exact = []
                for step in program.steps[1:]:
                    w = self.windows[step.stream]
                    index = w.table.index(step.probe_field) if step.probe_field is not None else None
                    cross.append((w, index, step.probe_field, step.probe_src_field, w.needs_admit))
                    if exact is not None:
                        if index is None or w.needs_admit or step.probe_src_field is None:
                            exact = None
                        else:
                            exact.append((w.table.stats, index, step.probe_src_field))
            self.cross.append(cross)
            slots: tuple[int, ...] | None = program.query_slots
            if slots == tuple(range(len(self.names))):
                slots = None
            self.exact_cross.append((exact, slots) if exact is not None else None)

    def eligible(self, k: Entry) -> bool:
        """Return True when `k` may be the youngest member of a result (filter, own window)."""
        if not k.passes:
            return False
        own = self.own[k.input]
        return own is None or own(k)

    def join_one(self, k: Entry, check_seq: bool, results: list[Result]) -> None:
        """Join one new record `k` as the youngest member of its results."""
        program = self.by_input[k.input]
        steps = self.cross[k.input]
        if steps is not None:
            found = run_cross_product(k, steps, program.query_slots, check_seq)
            if found:
                self.tables[k.input].stats.results += len(found)
                results.extend(found)  # already in query order
        elif program.origin_pos == 0:
            self._emit(run_origin_first(k, program, self.windows, check_seq), program, results)
        else:
            self._emit(run_general((k,), program, self.windows), program, results)

    def join_batch(self, batch: Sequence[Entry], results: list[Result]) -> None:
        """Join a lazy batch: each eligible record as the youngest member of its results."""
        for origin, program in self.programs.items():
            i = self._index[origin]
            eligible = [k for k in batch if k.input == i and self.eligible(k)]
            if not eligible:
                continue
            if program.origin_pos == 0:
                for k in eligible:
                    self.join_one(k, True, results)
            else:
                self._emit(run_general(eligible, program, self.windows), program, results)

    def _emit(self, partials: list[Partial], program: Program, results: list[Result]) -> None:
        if not partials:
            return
        self.windows[program.origin].table.stats.results += len(partials)
        reorder = program.to_query_order
        results.extend(partials if reorder is None else map(reorder, partials))
