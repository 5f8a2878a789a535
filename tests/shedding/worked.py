"""The paper's worked example (Ojewole et al., section 4): two streams, six instants, w = 4.

r(i) joins s(t) iff |t - i| <= 3, so the window is `{"range": 3}`; importance of a result is the
min of its members'. Exact: 9 results of importance 32.
"""

from __future__ import annotations

from typing import Any

__all__ = ["R", "S", "events", "query"]

R = [(1, 1), (9, 20), (1, 1), (3, 5), (4, 5), (2, 1)]  # r(t) = (join value, importance)
S = [(3, 5), (1, 1), (1, 1), (1, 1), (9, 20), (1, 1)]


def query(memory: int = 4, policy: str = "simp") -> dict[str, Any]:
    """Return the worked example's query JSON."""
    return {
        "name": "worked",
        "output": {"topic": "worked.out"},
        "inputs": [{"stream": s, "timestamp": "t", "window": {"range": 3}} for s in ("r", "s")],
        "where": [["r.k", "=", "s.k"]],
        "shedding": {"memory": memory, "policy": policy, "importance": "imp", "combine": "min"},
    }


def events() -> list[dict[str, Any]]:
    """Return the events in replay format: r(t) then s(t) for t = 0..5."""
    out: list[dict[str, Any]] = []
    for t, ((rk, ri), (sk, si)) in enumerate(zip(R, S, strict=True)):
        out.append({"stream": "r", "record": {"t": t, "k": rk, "imp": ri}})
        out.append({"stream": "s", "record": {"t": t, "k": sk, "imp": si}})
    return out
