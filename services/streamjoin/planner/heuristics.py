"""Golab & Özsu's join-ordering heuristics (section 5), over a compiled `CostModel`.

Orders are tuples of stream numbers (`CostModel.names` positions). Definitions the paper leaves
open, chosen here (docs/planner.md explains them):

- Initial order (H1): start with the pair of windows with the smallest binary join
  `|S_m ⋈ S_n| = W_m W_n / max(v_m, v_n)` (W discounted by hash buckets), the one with fewer
  expected matches per probe `W/v` first; then repeatedly append the window whose binary join with
  a placed window is smallest. Only pairs an equality connects count. Ties go to the lower number.
- Fast streams: rate more than `fast_factor` (3) times the median rate of the other streams; at
  most `max_fast` (3) of them, fastest first.
- Augmented: keep the other streams' relative order and try every placement of the fast ones
  (n!/(n-f)! <= n^f candidates), from each seed; keep the cheapest.
- Extra seeds: the running-result greedy, H2 (ascending `W/v`), ascending `W/b` (the paper's
  order for equal `v`) and the hybrid order with hashed windows in the inner loops (§5.4).
- Refinement (not in the paper): move one window or swap two while that lowers the cost.
- Local orders (GENERAL LAZY, joins on different attributes): the same per origin, plus the greedy
  "origin first, then the most selective predicate the join graph allows".
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence

from streamjoin.planner.budget import UNBOUNDED, SearchBudget
from streamjoin.planner.cost import CostModel, LoopState

__all__ = [
    "binary_size",
    "fast_streams",
    "greedy_local",
    "hashed_inner",
    "heuristic_global",
    "heuristic_local",
    "initial_order",
    "link_order",
    "match_order",
    "placements",
    "refine",
    "result_order",
    "size_order",
]

Order = tuple[int, ...]


def _size(model: CostModel, j: int, origin: int | None) -> float:
    if origin is not None and j == origin and model.tau is not None:
        return model.rates[j] * model.tau
    return model.sizes[j]


def _scan_size(model: CostModel, j: int, origin: int | None) -> float:
    return _size(model, j, origin) / max(model.buckets[j])


def _distinct(model: CostModel, j: int) -> float:
    return max((v for v in model.distinct[j] if v is not None), default=1.0)


def binary_size(model: CostModel, m: int, n: int, origin: int | None = None) -> float:
    """Return the estimated `|S_m ⋈ S_n|`, windows discounted by their buckets (inf if no edge)."""
    factor, linked = 1.0, False
    for vm, vn in zip(model.distinct[m], model.distinct[n], strict=True):
        if vm is not None and vn is not None:
            factor /= max(vm, vn)
            linked = True
    if not linked:
        return float("inf")
    return _scan_size(model, m, origin) * _scan_size(model, n, origin) * factor


def link_order(model: CostModel, preference: Sequence[int], first: Sequence[int] = ()) -> Order:
    """Return `first`, then `preference`'s other streams, each added once an equality links it.

    At each step the earliest stream of `preference` joined to a placed one is appended; if none
    is (a disconnected graph), the earliest remaining one is.
    """
    placed = list(first)
    mask = sum(1 << j for j in placed)
    rest = [j for j in preference if j not in placed]
    while rest:
        pick = next((j for j in rest if not placed or model.linked(mask, j)), rest[0])
        placed.append(pick)
        mask |= 1 << pick
        rest.remove(pick)
    return tuple(placed)


def initial_order(model: CostModel, origin: int | None = None) -> Order:
    """Return H1: joins assembled by ascending binary result size (most selective first)."""
    n = len(model.names)
    if n == 1:
        return (0,)

    def per_probe(j: int) -> tuple[float, int]:
        return (_scan_size(model, j, origin) / _distinct(model, j), j)

    pairs = sorted(
        ((binary_size(model, a, b, origin), a, b) for a, b in itertools.combinations(range(n), 2)),
        key=lambda t: (t[0], t[1], t[2]),
    )
    _, a, b = pairs[0]
    placed = sorted((a, b), key=per_probe)
    while len(placed) < n:
        rest = [j for j in range(n) if j not in placed]
        best = min(rest, key=lambda j: (min(binary_size(model, k, j, origin) for k in placed), j))
        placed.append(best)
    return tuple(placed)


def result_order(model: CostModel) -> Order:
    """Return H1's first pair, then greedily the window giving the smallest intermediate result.

    Unlike H1, which compares binary joins, this tracks the running result `R` (its size and the
    smallest distinct count `v_R` per class), as the loops see it.
    """
    first = initial_order(model)[:2]
    a = first[0]
    state = LoopState(model.sizes[a], 0.0, model.distinct[a], 1 << a)
    order = [a]
    rest = [j for j in range(len(model.names)) if j != a]
    nxt = first[1:]
    while rest:
        linked = [j for j in rest if model.linked(state.placed, j)] or rest
        pick = nxt[0] if nxt else min(linked, key=lambda j: (model.extend(state, j, -1).results, j))
        nxt = ()
        state = model.extend(state, pick, -1)
        order.append(pick)
        rest.remove(pick)
    return tuple(order)


def match_order(model: CostModel, origin: int | None = None) -> Order:
    """Return H2: windows by ascending expected matches per probe `W / (b v)`, kept connected."""

    def per_probe(j: int) -> tuple[float, int]:
        return (_scan_size(model, j, origin) / _distinct(model, j), j)

    pref = sorted(range(len(model.names)), key=per_probe)
    return link_order(model, pref)


def size_order(model: CostModel) -> Order:
    """Return windows by ascending average bucket size `W / b` (§5.1, for equal `v`), kept connected."""
    pref = sorted(range(len(model.names)), key=lambda j: (_scan_size(model, j, None), j))
    return link_order(model, pref)


def hashed_inner(model: CostModel, seed: Sequence[int]) -> Order:
    """Return `seed` with the hashed windows moved to the inner loops (hybrid hash/NLJ, §5.4)."""
    plain = [j for j in seed if max(model.buckets[j]) <= 1]
    hashed = [j for j in seed if max(model.buckets[j]) > 1]
    return link_order(model, plain + hashed)


def fast_streams(model: CostModel, factor: float = 3.0, limit: int = 3) -> tuple[int, ...]:
    """Return the streams whose rate exceeds `factor` times the median of the others' rates."""
    rates = model.rates
    fast = [
        i
        for i in range(len(rates))
        if len(rates) > 1 and rates[i] > factor * statistics.median(r for k, r in enumerate(rates) if k != i)
    ]
    fast.sort(key=lambda i: (-rates[i], i))
    return tuple(fast[:limit])


def placements(seed: Sequence[int], movable: Sequence[int], fixed_prefix: int = 0) -> Iterator[Order]:
    """Yield every order keeping `seed`'s other streams in order, `movable` at any position.

    The first `fixed_prefix` entries of `seed` stay where they are.
    """
    head = tuple(seed[:fixed_prefix])
    tail = list(seed[fixed_prefix:])
    move = [j for j in movable if j in tail]
    keep = [j for j in tail if j not in move]
    for positions in itertools.permutations(range(len(tail)), len(move)):
        out: list[int | None] = [None] * len(tail)
        for j, pos in zip(move, positions, strict=True):
            out[pos] = j
        it = iter(keep)
        yield head + tuple(j if j is not None else next(it) for j in out)


def refine(
    order: Order,
    cost: Callable[[Order], float],
    valid: Callable[[Order], bool],
    fixed_prefix: int = 0,
    budget: SearchBudget = UNBOUNDED,
) -> Order:
    """Return `order` improved by local moves (one window moved, or two swapped) while the cost drops.

    Stops with the best order so far once `budget` expires.
    """
    best, best_cost = order, cost(order)
    for _ in range(4 * len(order) ** 2):
        improved = False
        for cand in _moves(best, fixed_prefix):
            if budget.expired():
                return best
            if valid(cand):
                c = cost(cand)
                if c < best_cost * (1 - 1e-12):
                    best, best_cost, improved = cand, c, True
        if not improved:
            break
    return best


def _moves(order: Order, fixed_prefix: int) -> Iterator[Order]:
    span = range(fixed_prefix, len(order))
    for a in span:
        for b in span:
            if a != b:
                moved = list(order)
                moved.insert(b, moved.pop(a))
                yield tuple(moved)
            if a < b:
                swapped = list(order)
                swapped[a], swapped[b] = swapped[b], swapped[a]
                yield tuple(swapped)


def _cheapest(
    cands: Iterable[Order],
    cost: Callable[[Order], float],
    valid: Callable[[Order], bool],
    budget: SearchBudget = UNBOUNDED,
) -> Order:
    best: Order | None = None
    best_cost = float("inf")
    for cand in dict.fromkeys(cands):
        if best is not None and budget.expired():
            break
        if valid(cand):
            c = cost(cand)
            if c < best_cost * (1 - 1e-12) or best is None:
                best, best_cost = cand, c
    if best is None:
        raise ValueError("no valid candidate order")
    return best


def _valid_links(model: CostModel) -> Callable[[Order], bool]:
    everything = (1 << len(model.names)) - 1
    # Enforce connectivity only when the join graph allows it (it links every stream somewhere).
    if all(model.links[j] for j in range(len(model.names))) and _graph_connected(model, everything):
        return model.connected
    return lambda order: True


def _graph_connected(model: CostModel, everything: int) -> bool:
    seen, frontier = 1, [0]
    while frontier:
        j = frontier.pop()
        new = model.links[j] & ~seen
        seen |= new
        frontier.extend(k for k in range(len(model.names)) if new >> k & 1)
    return seen == everything


def heuristic_global(
    model: CostModel,
    *,
    fast_factor: float = 3.0,
    max_fast: int = 3,
    extra_seeds: bool = True,
    polish: bool = True,
    budget: SearchBudget = UNBOUNDED,
) -> Order:
    """Return the augmented heuristic's global order (each origin first, then the order).

    With `extra_seeds=False, polish=False` this is the paper's heuristic alone: H1, then every
    placement of the fast streams. Once `budget` expires the best order found so far is kept.
    """
    seeds = [initial_order(model)]
    if extra_seeds:
        seeds += [result_order(model), match_order(model), size_order(model), hashed_inner(model, seeds[0])]
    fast = fast_streams(model, fast_factor, max_fast)
    valid = _valid_links(model)
    cands = itertools.chain.from_iterable(placements(seed, fast) for seed in seeds)
    best = _cheapest(cands, model.order_cost, valid, budget)
    return refine(best, model.order_cost, valid, 0, budget) if polish else best


def greedy_local(model: CostModel, origin: int) -> Order:
    """Return origin first, then greedily the window giving the fewest partial results (§5.4)."""
    state = model.start(origin, origin)
    order = [origin]
    rest = [j for j in range(len(model.names)) if j != origin]
    while rest:
        linked = [j for j in rest if model.linked(state.placed, j)] or rest
        nxt = [(model.extend(state, j, origin), j) for j in linked]
        new, pick = min(nxt, key=lambda t: (t[0].results, t[0].cost, t[1]))
        state = new
        order.append(pick)
        rest.remove(pick)
    return tuple(order)


def heuristic_local(
    model: CostModel,
    origin: int,
    seeds: Sequence[Order] = (),
    *,
    fast_factor: float = 3.0,
    max_fast: int = 3,
    polish: bool = True,
    budget: SearchBudget = UNBOUNDED,
) -> Order:
    """Return a local order for `origin`'s new records (first under eager evaluation).

    Candidates: each seed (global orders) with the origin first and kept connected, H1 and H2
    over the windows with the origin's batch, the greedy order, and the placements of the fast
    streams; under lazy evaluation also every position of the origin's batch (GENERAL LAZY).
    """
    fixed = 0 if model.lazy else 1
    valid_links = _valid_links(model)

    def valid(order: Order) -> bool:
        return (model.lazy or order[0] == origin) and valid_links(order)

    def cost(order: Order) -> float:
        return model.origin_cost(origin, order)

    base = [link_order(model, seed, (origin,)) for seed in seeds]
    base += [
        link_order(model, initial_order(model, origin), (origin,)),
        link_order(model, match_order(model, origin), (origin,)),
        greedy_local(model, origin),
    ]
    if model.lazy:
        base += [initial_order(model, origin), match_order(model, origin)]
    fast = [j for j in fast_streams(model, fast_factor, max_fast) if j != origin]
    # The fast streams' placements, and (lazy) the batch's positions; refinement combines them.
    moves = [fast, [origin]] if model.lazy else [fast]
    cands = itertools.chain.from_iterable(placements(seed, m, fixed) for seed in base for m in moves)
    best = _cheapest(cands, cost, valid, budget)
    return refine(best, cost, valid, fixed, budget) if polish else best
