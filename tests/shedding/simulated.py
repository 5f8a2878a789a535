"""The reference simulator's results over replay's lines, as the oracle's keys (`streamjoin.testing`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from streamjoin.query import QueryDef
from streamjoin.shedding import build_instance, make_policy, simulate
from streamjoin.testing import ResultKey

__all__ = ["simulated"]


def simulated(
    query: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]], share: int | None, policy: str | None = None
) -> Counter[ResultKey]:
    """Return the simulator's results of `query` over `lines` (stream, record), in timestamp order.

    Each window holds at most `share` records, evicting by the registered policy `policy` (the
    query's by default); `share` None sheds nothing. Keys are (partition 0, offset), the offset a
    line's position among its stream's lines, as in replay.
    """
    assert query.shedding is not None
    field = {inp.stream: inp.timestamp for inp in query.inputs}
    # The engine orders the records of one timestamp by input, then offset (the simulator: by line).
    ordered = sorted(lines, key=lambda line: (line[1][field[line[0]]], query.input_index(line[0])))
    events = [(n, s, float(r[field[s]]), r) for n, (s, r) in enumerate(ordered, start=1)]
    instance = build_instance(query, events)
    name = policy or query.shedding.policy
    chosen = None if share is None else make_policy(name, instance.context(query.shedding.seed))
    outcome = simulate(instance, chosen, share)
    return Counter(tuple((0, instance.offsets[seq]) for seq in r.members) for r in outcome.results)
