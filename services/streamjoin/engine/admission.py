"""Admission: the window model. Which held records may join a result, decided in one place.

A candidate `u` joins a result whose youngest member is `k` only if it was released before `k`
(`u.seq < k.seq`, which is what emits each result once) and the window model admits it *as seen at
`k.ts`*. Today's model is `SlidingWindows`: range, `u.ts >= k.ts - T` (inclusive); rows, fewer than
`N` newer records of its group with timestamp `<= k.ts`.

The model is chosen once per query (`admission_for`) and serves both sides of the engine:
- the compiler (`compile_program`) asks it for checks between a candidate and the records already
  bound (`pair_checks`; none for sliding windows, `|ts_x - ts_y| <= w` for a W-join);
- the engine builds each window's `WindowRuntime` from it: the admission closures the loops call,
  specialised once for what the schedule lets a window hold (`Holding`), so a check that cannot
  fail in the current mode costs nothing.

A new window model is a class implementing `Admission` plus one `register_admission` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streamjoin.engine.edges import PairCheck
from streamjoin.engine.entry import Entry
from streamjoin.engine.window import WindowStore
from streamjoin.query.model import InputDef, QueryDef, RangeWindow, RowsWindow

__all__ = [
    "ADMISSIONS",
    "AdmitFn",
    "Admission",
    "AdmissionRule",
    "Holding",
    "SlidingWindows",
    "WindowRuntime",
    "admission_for",
    "register_admission",
]

AdmitFn = Callable[[Any, Entry, bool], Sequence[Entry]]
"""`admit(candidates, k, check_seq)`: the candidates that may join a result whose youngest member is
`k`; with `check_seq`, also only those released before `k` (equal timestamps, lazy batches)."""


@dataclass(frozen=True, slots=True)
class Holding:
    """What the schedule lets a window hold when it is probed."""

    expired: bool  # records that left their window (lazy expiration, or lazy evaluation)
    exact_counts: bool  # every held record has ts <= the joining record's (eager evaluation)


@dataclass(slots=True)
class WindowRuntime:
    """A window table plus the admission its model and mode need, bound once."""

    table: WindowStore
    admit: AdmitFn
    needs_admit: bool  # False: `admit` only tests the release order, and only with check_seq
    admits: Callable[[Entry, Entry], bool]  # `admits(u, k)`: one candidate, every test
    own: Callable[[Entry], bool] | None  # is `k` still in its own window at k.ts (None: always)


class Admission(Protocol):
    """A window model: what a window holds and which of its records join."""

    release_inclusive: bool  # records are released at the watermark itself (else strictly below)

    def store_input(self, inp: InputDef) -> InputDef:
        """Return the input definition the window store is built from (its expiry reach)."""
        ...

    def keeps_filtered(self, inp: InputDef) -> bool:
        """Return True when a record failing the input's filter still occupies the window."""
        ...

    def pair_checks(self, stream: str, bound: Mapping[str, int]) -> Sequence[PairCheck]:
        """Return the checks of a candidate of `stream` against the bound records (stream: position)."""
        ...

    def runtime(self, inp: InputDef, table: WindowStore, holding: Holding, filtered: bool) -> WindowRuntime:
        """Return the window's runtime: admission closures specialised for `holding`.

        `filtered`: the input has a filter, so a held record may fail it (see `keeps_filtered`).
        """
        ...


class SlidingWindows:
    """Range windows (`u.ts >= k.ts - T`, inclusive) and count windows (the newest `N` per group)."""

    def __init__(self, query: QueryDef) -> None:
        # A later record with the same timestamp changes which records a count window holds at
        # that time: count windows release only strictly below the watermark.
        self.release_inclusive = all(isinstance(i.window, RangeWindow) for i in query.inputs)

    def store_input(self, inp: InputDef) -> InputDef:
        """Return `inp`: the store expires exactly the window."""
        return inp

    def keeps_filtered(self, inp: InputDef) -> bool:
        """Return True for count windows (a filtered record still counts)."""
        return isinstance(inp.window, RowsWindow)

    def pair_checks(self, stream: str, bound: Mapping[str, int]) -> Sequence[PairCheck]:
        """Return no checks: a sliding window admits against the youngest member only."""
        return ()

    def runtime(self, inp: InputDef, table: WindowStore, holding: Holding, filtered: bool) -> WindowRuntime:
        """Return the range or count window's runtime."""
        window = inp.window
        if isinstance(window, RangeWindow):
            return _range_runtime(table, window.range, holding)
        if isinstance(window, RowsWindow):
            return _rows_runtime(table, window.rows, filtered, holding)
        raise ValueError(f"input {inp.stream!r} has no window: sliding windows cannot run it")


def _seq_only(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
    if check_seq:
        kseq = k.seq
        return [u for u in entries if u.seq < kseq]
    return entries  # type: ignore[no-any-return]


def _range_runtime(table: WindowStore, range_: float, holding: Holding) -> WindowRuntime:
    def admits(u: Entry, k: Entry) -> bool:
        return u.seq < k.seq and u.passes and u.ts >= k.ts - range_

    if not holding.expired:  # the store holds exactly the window: only the release order to test
        return WindowRuntime(table, _seq_only, False, admits, None)

    def admit(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
        lo = k.ts - range_
        if check_seq:
            kseq = k.seq
            return [u for u in entries if u.ts >= lo and u.seq < kseq]
        return [u for u in entries if u.ts >= lo]

    return WindowRuntime(table, admit, True, admits, None)


def _rows_runtime(table: WindowStore, rows: int, check_passes: bool, holding: Holding) -> WindowRuntime:
    check_member = holding.expired  # records beyond the newest `rows` may still be held
    exact_counts = holding.exact_counts

    def admits(u: Entry, k: Entry) -> bool:
        return u.seq < k.seq and u.passes and bool(u.cnt > u.group.count_at(k.ts) - rows)

    def own(k: Entry) -> bool:
        return bool(k.cnt > k.group.count_at(k.ts) - rows)

    def admit(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
        if not (check_member or check_passes or check_seq):
            return entries  # type: ignore[no-any-return]
        kseq, kts = k.seq, k.ts
        cutoffs: dict[int, int] = {}
        out = []
        for u in entries:
            if u.seq >= kseq or not u.passes:
                continue
            if check_member:
                group = u.group
                cut = cutoffs.get(id(group))
                if cut is None:
                    cut = cutoffs[id(group)] = (group.count if exact_counts else group.count_at(kts)) - rows
                if u.cnt <= cut:
                    continue
            out.append(u)
        return out

    return WindowRuntime(table, admit, True, admits, own)


AdmissionRule = Callable[[QueryDef], "Admission | None"]
"""Return the query's window model when this rule applies to it, else None."""

ADMISSIONS: list[AdmissionRule] = []


def register_admission(rule: AdmissionRule) -> AdmissionRule:
    """Register a window model (tried before sliding windows, latest registered first)."""
    ADMISSIONS.insert(0, rule)
    return rule


def admission_for(query: QueryDef) -> Admission:
    """Return the first registered window model that applies to `query`, else sliding windows."""
    for rule in ADMISSIONS:
        found = rule(query)
        if found is not None:
            return found
    return SlidingWindows(query)
