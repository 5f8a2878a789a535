"""Golab & Özsu's join-processing cost model (spec: cost-model.md), in comparisons per time unit.

A batch of new records from origin stream i is joined with the other windows by nested loops in
its local order `O_i`. The outer loop is free; every further loop scans, per partial result, one
hash bucket of its window (`size / buckets`, the whole window when `buckets == 1`), and the partial
results grow by `size / max(v_R, v_j)` under uniform values and containment of value sets, where
`v_R` is the smallest distinct count joined so far (tracked per class of equal attributes).

- Eager evaluation: every record is its own batch of 1 and comes first (Golab's Table 4), so the
  cost of a global order G is `sum_i lambda_i * c_i(i, G without i)`, exactly cost-model.md.
- Lazy evaluation every `tau`: origin i's batch holds `lambda_i * tau` records and runs `1/tau`
  times per time unit; windows are expired only every `tau`, so they physically hold
  `lambda_j * (T_j + tau)` records, and both scans and match counts use that physical size (the
  reconstruction that reproduces Fig. 3's claims). LAZY puts the batch first; GENERAL LAZY lets
  each origin use any order, and since the cost is a sum over origins, each is optimised alone.

>>> from streamjoin.planner.stats import StreamStats
>>> table5 = [StreamStats("S1", 10, 100, distinct=500), StreamStats("S2", 1, 100, distinct=50),
...           StreamStats("S3", 1, 200, distinct=40), StreamStats("S4", 3, 100, distinct=5)]
>>> CostModel.build({s.name: s for s in table5}).global_cost(["S1", "S2", "S3", "S4"])
16000.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from streamjoin.engine.algorithm import ALGORITHMS
from streamjoin.engine.plan import JoinPlan
from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.stats import StreamStats
from streamjoin.query.grammar import Algorithm
from streamjoin.query.model import FieldRef, Predicate

__all__ = ["CostModel", "LoopState"]


class LoopState(NamedTuple):
    """The nested loops after some windows: partial results, cost so far, per-class `v_R`, placed."""

    results: float
    cost: float
    distinct: tuple[float | None, ...]
    placed: int


@dataclass(frozen=True, slots=True)
class CostModel:
    """The order-independent inputs of the cost formulas, compiled for fast evaluation.

    Streams are numbered in `names` order. `distinct[j][c]` is stream j's distinct count in join
    class c (None when j has no field in c); `buckets[j][c]` the buckets of j's hash index on that
    class; `observed[(c, i, j)]` (i < j) an observed selectivity replacing `1 / max(v_i, v_j)`.
    """

    names: tuple[str, ...]
    rates: tuple[float, ...]
    sizes: tuple[float, ...]
    distinct: tuple[tuple[float | None, ...], ...]
    buckets: tuple[tuple[float, ...], ...]
    tau: float | None = None
    observed: Mapping[tuple[int, int, int], float] = field(default_factory=dict)
    links: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _single: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.names)
        if not (len(self.rates) == len(self.sizes) == len(self.distinct) == len(self.buckets) == n):
            raise ValueError("every per-stream tuple needs one entry per stream")
        classes = [{c for c, v in enumerate(row) if v is not None} for row in self.distinct]
        links = [sum(1 << k for k in range(n) if k != j and classes[j] & classes[k]) for j in range(n)]
        object.__setattr__(self, "links", tuple(links))
        one_class = all(len(row) == 1 and row[0] is not None for row in self.distinct)
        object.__setattr__(self, "_single", one_class and not self.observed)

    @classmethod
    def build(
        cls,
        stats: Mapping[str, StreamStats],
        graph: JoinGraph | None = None,
        *,
        tau: float | None = None,
        expiration_every: float | None = None,
        algorithm: Algorithm | None = None,
        selectivity: Mapping[Predicate, float] | None = None,
    ) -> CostModel:
        """Compile the model for `stats` (keyed by stream name) joined as `graph`.

        Args:
            stats: the statistics of every stream of the graph.
            graph: the join graph; default: every stream of `stats` joins on one common attribute.
            tau: lazy re-evaluation interval; None for eager evaluation.
            expiration_every: lazy expiration interval; windows grow by `rate * max(tau, this)`.
            algorithm: one that probes no index (`nlj`) forces one bucket everywhere; one that
                does (`hash`) uses one bucket per distinct key where a stream's `buckets` is None.
            selectivity: observed selectivity per join edge, overriding the distinct-count estimate.
        """
        graph = graph or JoinGraph.common(tuple(stats))
        missing = [s for s in graph.streams if s not in stats]
        if missing:
            raise ValueError(f"no statistics for stream(s) {missing}")
        if tau is not None and tau <= 0:
            raise ValueError("tau must be > 0")
        grow = max(tau or 0.0, expiration_every or 0.0)
        names = graph.streams
        distinct: list[tuple[float | None, ...]] = []
        buckets: list[tuple[float, ...]] = []
        for name in names:
            st = stats[name]
            row: list[float | None] = []
            for c in range(len(graph.classes)):
                fields = graph.fields(name, c)
                row.append(min(st.distinct_of(f) for f in fields) if fields else None)
            distinct.append(tuple(row))
            buckets.append(tuple(_buckets(st, v, algorithm) for v in row))
        observed: dict[tuple[int, int, int], float] = {}
        for pred, sel in (selectivity or {}).items():
            key = _edge_key(pred, graph)
            if key is not None:
                observed[key] = sel
        return cls(
            names=names,
            rates=tuple(stats[s].rate for s in names),
            sizes=tuple(stats[s].records + stats[s].rate * grow for s in names),
            distinct=tuple(distinct),
            buckets=tuple(buckets),
            tau=tau,
            observed=observed,
        )

    @property
    def single_attribute(self) -> bool:
        """Return True when every stream joins on one common attribute (any order is valid)."""
        return any(all(row[c] is not None for row in self.distinct) for c in range(len(self.distinct[0])))

    @property
    def lazy(self) -> bool:
        """Return True under lazy re-evaluation (batches of `rate * tau` records)."""
        return self.tau is not None

    def index(self, name: str) -> int:
        """Return the number of stream `name`."""
        return self.names.index(name)

    def start(self, origin: int, first: int) -> LoopState:
        """Return the loops after the outer-most one, over window `first`, for `origin`'s batch."""
        size = self._batch(origin) if first == origin else self.sizes[first]
        if not self.lazy and first != origin:
            raise ValueError("eager evaluation processes the new record in the outer loop")
        return LoopState(size, 0.0, self.distinct[first], 1 << first)

    def extend(self, state: LoopState, j: int, origin: int) -> LoopState:
        """Return the loops after adding window `j` inside `state`."""
        size = self._batch(origin) if j == origin else self.sizes[j]
        n, cost, vr, placed = state
        if self._single:  # one common attribute: the hot path, same arithmetic as below
            v, vj = vr[0], self.distinct[j][0]
            if v is not None and vj is not None:
                return LoopState(
                    n * size * (1.0 / max(v, vj)),
                    cost + n * size / max(1.0, self.buckets[j][0]),
                    (min(v, vj),),
                    placed | 1 << j,
                )
        factor, scan_buckets, linked = 1.0, 1.0, False
        new_v = list(vr)
        for c, vj in enumerate(self.distinct[j]):
            if vj is None:
                continue
            v_placed = vr[c]
            if v_placed is None:
                new_v[c] = vj
                continue
            linked = True
            scan_buckets = max(scan_buckets, self.buckets[j][c])
            seen = self._observed(c, j, placed) if self.observed else None
            factor *= seen if seen is not None else 1.0 / max(v_placed, vj)
            new_v[c] = min(v_placed, vj)
        if not linked:
            scan_buckets = 1.0  # a cross product scans the whole window
        return LoopState(n * size * factor, cost + n * size / scan_buckets, tuple(new_v), placed | 1 << j)

    def linked(self, placed: int, j: int) -> bool:
        """Return True when an equality joins window `j` to a window of the `placed` bit mask."""
        return bool(self.links[j] & placed)

    def connected(self, order: Sequence[int]) -> bool:
        """Return True when every window after the first is joined by an equality to an earlier one."""
        placed = 0
        for k, j in enumerate(order):
            if k and not self.links[j] & placed:
                return False
            placed |= 1 << j
        return True

    def weight(self, origin: int) -> float:
        """Return how many batches of `origin` are processed per time unit."""
        return 1.0 / self.tau if self.tau is not None else self.rates[origin]

    def origin_cost(self, origin: int, order: Sequence[int]) -> float:
        """Return the cost per time unit of `origin`'s new records joined in local order `order`."""
        if sorted(order) != list(range(len(self.names))):
            raise ValueError(f"local order {list(order)} is not a permutation of the streams")
        state = self.start(origin, order[0])
        for j in order[1:]:
            state = self.extend(state, j, origin)
        return self.weight(origin) * state.cost

    def global_cost(self, order: Sequence[str]) -> float:
        """Return the cost of global order `order`: each origin first, then `order` without it."""
        return self.order_cost([self.index(s) for s in order])

    def order_cost(self, order: Sequence[int]) -> float:
        """Return the cost of the global order of stream numbers `order` (see `global_cost`)."""
        return sum(self.origin_cost(i, [i, *(j for j in order if j != i)]) for i in order)

    def local_costs(self, plan: JoinPlan) -> dict[str, float]:
        """Return the cost per time unit of each origin stream's local order in `plan`."""
        return {
            name: self.origin_cost(i, [self.index(s) for s in plan.local_orders[name]])
            for i, name in enumerate(self.names)
        }

    def plan_cost(self, plan: JoinPlan) -> float:
        """Return the total cost per time unit of `plan`'s local orders."""
        return sum(self.local_costs(plan).values())

    def output_rate(self) -> float:
        """Return the expected results per time unit (independent of the order)."""
        total = 0.0
        for i in range(len(self.names)):
            state = self.start(i, i)
            for j in range(len(self.names)):
                if j != i:
                    state = self.extend(state, j, i)
            total += self.weight(i) * state.results
        return total

    def _batch(self, origin: int) -> float:
        return self.rates[origin] * self.tau if self.tau is not None else 1.0

    def _observed(self, c: int, j: int, placed: int) -> float | None:
        # Under containment, joining j with several placed members of a class is as selective as
        # the least selective pair: 1/max(min_k v_k, v_j) = max_k 1/max(v_k, v_j).
        best: float | None = None
        for k in range(len(self.names)):
            if placed >> k & 1:
                sel = self.observed.get((c, min(j, k), max(j, k)))
                if sel is not None and (best is None or sel > best):
                    best = sel
        return best


def _buckets(st: StreamStats, distinct: float | None, algorithm: Algorithm | None) -> float:
    """Return how many buckets a probe of `st`'s window chooses from (1: the whole window is scanned)."""
    if distinct is None or (algorithm is not None and not ALGORITHMS[algorithm].probes_index):
        return 1.0
    if st.buckets is not None:
        return float(st.buckets)
    return float(distinct) if algorithm is not None else 1.0


def _edge_key(pred: Predicate, graph: JoinGraph) -> tuple[int, int, int] | None:
    left, right = pred.left, pred.right
    if not (pred.is_join_edge and isinstance(left, FieldRef) and isinstance(right, FieldRef)):
        return None
    for c, members in enumerate(graph.classes):
        if (left.stream, left.field) in members:
            i, j = graph.streams.index(left.stream), graph.streams.index(right.stream)
            return (c, min(i, j), max(i, j))
    return None
