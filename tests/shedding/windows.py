"""Windows of the shedding property tests: range and count windows, and what they hold without shedding.

`windows` draws each input's window: a range window, a count window, or a count window partitioned
by the record field `g`. `most_held` is the most records any window holds at once when nothing is
shed, computed from the definitions (not from the simulator): a range window holds the records with
`now - range <= ts <= now`, a count window the last `N` records with `ts <= now` of each group (its
stream is one partition, as in replay).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from streamjoin.query import QueryDef, RangeWindow, RowsWindow

__all__ = ["most_held", "windows"]


@st.composite
def windows(draw: st.DrawFn, count: int) -> list[dict[str, Any]]:
    """Draw the windows of `count` inputs."""
    out: list[dict[str, Any]] = []
    for _ in range(count):
        kind = draw(st.sampled_from(["range", "rows", "partitioned"]))
        if kind == "range":
            out.append({"range": draw(st.integers(1, 3))})
        elif kind == "rows":
            out.append({"rows": draw(st.integers(1, 3))})
        else:
            out.append({"rows": draw(st.integers(1, 2)), "partition_by": "g"})
    return out


def most_held(query: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]], ts: str = "t") -> int:
    """Return the most records any window of `query` holds at once over `lines`, without shedding."""
    most = 1
    times = sorted({r[ts] for _, r in lines})
    for inp in query.inputs:
        mine = [r for s, r in lines if s == inp.stream]
        for now in times:
            window = inp.window
            if isinstance(window, RangeWindow):
                held = sum(1 for r in mine if now - window.range <= r[ts] <= now)
            elif isinstance(window, RowsWindow):
                groups: dict[Any, int] = {}
                for r in mine:
                    if r[ts] <= now:
                        key = r.get(window.partition_by) if window.partition_by else None
                        groups[key] = groups.get(key, 0) + 1
                held = sum(min(n, window.rows) for n in groups.values())
            else:
                raise ValueError(f"input {inp.stream!r} has no window")
            most = max(most, held)
    return most
