"""The offline optimum of one window as a min-cost flow (ESJA in Ojewole et al.), solved by networkx.

Nodes `T_k` (one per instant, plus a sink) carry the window's `share` slots through time; every
record that can earn has a chain of nodes `U(seq, k)`: at its arrival and at each instant it would
earn a gain. Arcs (capacity, cost):

- `T_k -> T_k+1` (share, 0): an idle slot;
- `T_a -> U(seq, a)` (1, 0): admit the record at its arrival instant `a`;
- `U(seq, p) -> U(seq, q)` (1, -gain at q): hold it from one gain instant to the next;
- `U(seq, p) -> T_p+1` (1, 0): evict it after instant p.

`share` units flow from `T_0` to the sink; every cut between two instants carries exactly `share`
units, so no instant holds more than `share` records, and a held record's unit earns its gains. The
constraint matrix is a network matrix, so the optimum is integral: the best retention plan. Costs
are integers for network simplex: gains are scaled so the smallest is 10^6 units and rounded.
"""

from __future__ import annotations

from streamjoin.shedding.gains import Gains
from streamjoin.shedding.instance import ShedInstance

__all__ = ["flow_window"]


def flow_window(
    instance: ShedInstance, gains: Gains, window: int, share: int
) -> tuple[float, set[tuple[int, int]]]:
    """Return the best importance `window` can earn holding at most `share` records, and its plan."""
    chains = {
        e.seq: gains.points[e.seq]
        for e in instance.entries()
        if e.window == window and gains.points.get(e.seq)
    }
    if not chains:
        return 0.0, set()
    smallest = min(gains.importance[(seq, k)] for seq, points in chains.items() for k in points)
    scale = 1e6 / smallest
    last = len(instance.instants)
    import networkx as nx  # here: only the offline optimum needs it (0.1 s of every start-up)

    graph = nx.DiGraph()
    for k in range(last):
        graph.add_edge(("T", k), ("T", k + 1), capacity=share, weight=0)
    graph.nodes[("T", 0)]["demand"] = -share
    graph.nodes[("T", last)]["demand"] = share
    for seq, points in chains.items():
        at = instance.instant_of[seq]
        node = ("U", seq, at)
        graph.add_edge(("T", at), node, capacity=1, weight=0)
        for k in points:
            graph.add_edge(node, ("T", at + 1), capacity=1, weight=0)
            cost = -round(gains.importance[(seq, k)] * scale)
            graph.add_edge(node, ("U", seq, k), capacity=1, weight=cost)
            node, at = ("U", seq, k), k
        graph.add_edge(node, ("T", at + 1), capacity=1, weight=0)
    _, flow = nx.network_simplex(graph)
    plan: set[tuple[int, int]] = set()
    for seq, points in chains.items():
        at = instance.instant_of[seq]
        if flow[("T", at)][("U", seq, at)] != 1:
            continue
        for k in points:
            if flow[("U", seq, at)][("U", seq, k)] != 1:
                break
            plan.add((seq, k))
            at = k
    return sum(gains.importance[key] for key in plan), plan
