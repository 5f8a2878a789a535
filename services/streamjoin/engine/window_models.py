"""Window models beyond Golab's sliding windows: strict range windows and W-join constraints.

`ConstrainedWindows` is the `Admission` of every query with a strict range window, a `within`
pair or an input without a window (registered with `register_admission`); other queries keep
`SlidingWindows`.

- **Strict range windows** (Kostowski & Claypool, `t_max - ts < T`): the store is built from the
  inclusive `T` (it keeps the boundary instant one step longer) and the admission tests
  `u.ts > k.ts - T` in every mode.
- **W-join** (Hammad et al., `|ts_x - ts_y| <= w` for every `within` pair): the compiler gets a check
  of the candidate against every record already bound, with the bound *tightened* by shortest paths
  in the bound graph (`query.bounds.pair_bounds`), so a partial result that cannot be completed is
  cut at the first level where a tightened bound fails (the paper's period, tested pairwise).
  A record's *reach* is its largest bound against the other inputs: a result can hold no record of
  another input further from it than that. The store of an input without a window is a range
  window of its reach, so a record is expired only once it is out of reach of every other input
  (records are released in timestamp order, so no later record can be nearer: the expiry is
  watermark-based); a range window wider than its reach is stored with the reach.
  NLW-join and HW-join are this admission under `NestedLoops` and `HashJoin`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from streamjoin.engine.admission import Holding, SlidingWindows, WindowRuntime, register_admission
from streamjoin.engine.edges import PairCheck, Partial
from streamjoin.engine.entry import Entry
from streamjoin.engine.window import WindowStore
from streamjoin.query.bounds import pair_bounds
from streamjoin.query.model import InputDef, QueryDef, RangeWindow, RowsWindow

__all__ = ["ConstrainedWindows", "constrained_rule"]


class ConstrainedWindows(SlidingWindows):
    """Sliding windows plus strict range windows, `within` pairs and inputs without a window."""

    def __init__(self, query: QueryDef) -> None:
        super().__init__(query)
        self.release_inclusive = not any(isinstance(i.window, RowsWindow) for i in query.inputs)
        names = query.stream_names
        bounds = pair_bounds(query) if query.within or any(i.window is None for i in query.inputs) else {}
        self._bound: dict[str, dict[str, float]] = {s: {} for s in names}
        for (x, y), b in bounds.items():
            self._bound[x][y] = b
            self._bound[y][x] = b
        self._checked = bool(query.within)  # without `within`, the windows alone decide
        self._store: dict[str, InputDef] = {}
        for inp in query.inputs:
            mine = self._bound[inp.stream]
            reach = max(mine.values()) if len(mine) == len(names) - 1 and mine else None
            window = inp.window
            narrower = window is None or (
                isinstance(window, RangeWindow) and reach is not None and reach < window.range
            )
            if reach is not None and narrower:
                self._store[inp.stream] = replace(inp, window=RangeWindow(range=reach))
            else:
                self._store[inp.stream] = inp

    def store_input(self, inp: InputDef) -> InputDef:
        """Return the input as stored: a range window of its reach when that is narrower."""
        return self._store[inp.stream]

    def keeps_filtered(self, inp: InputDef) -> bool:
        """Return True for count windows only."""
        return isinstance(inp.window, RowsWindow)

    def pair_checks(self, stream: str, bound: Mapping[str, int]) -> Sequence[PairCheck]:
        """Return the check `|u.ts - p[x].ts| <= bound(stream, x)` against every bound record `x`."""
        if not self._checked:
            return ()
        mine = self._bound[stream]
        specs = tuple((pos, mine[other]) for other, pos in bound.items() if other in mine)
        if not specs:
            return ()

        def check(p: Partial, u: Entry) -> bool:
            ts = u.ts
            for pos, limit in specs:
                gap = ts - p[pos].ts
                if gap > limit or -gap > limit:
                    return False
            return True

        return (check,)

    def runtime(self, inp: InputDef, table: WindowStore, holding: Holding, filtered: bool) -> WindowRuntime:
        """Return the window's runtime: strict range windows test `u.ts > k.ts - T`."""
        window = inp.window
        if isinstance(window, RangeWindow) and window.strict:
            return _strict_runtime(table, window.range)
        return super().runtime(self._store[inp.stream], table, holding, filtered)


def _strict_runtime(table: WindowStore, range_: float) -> WindowRuntime:
    def admits(u: Entry, k: Entry) -> bool:
        return u.seq < k.seq and u.passes and u.ts > k.ts - range_

    def admit(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
        lo = k.ts - range_
        if check_seq:
            kseq = k.seq
            return [u for u in entries if u.ts > lo and u.seq < kseq]
        return [u for u in entries if u.ts > lo]

    return WindowRuntime(table, admit, True, admits, None)


def constrained_rule(query: QueryDef) -> ConstrainedWindows | None:
    """Return the model for queries with `within` pairs, windowless inputs or strict windows."""
    if query.within or any(
        i.window is None or (isinstance(i.window, RangeWindow) and i.window.strict) for i in query.inputs
    ):
        return ConstrainedWindows(query)
    return None


register_admission(constrained_rule)
