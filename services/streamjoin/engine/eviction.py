"""Eviction policies: what a window gives up when a released record enters it (load shedding).

The hook runs once per released record, right after it entered its window and expiry ran, before
it is joined. A policy may evict entries already held (`window.evict(entry)`) and may drop the
arriving record itself (return False). Either way the record leaves through the same path as an
expired one (`WindowStore.expired_log`, hence the checkpoint journal's `expired`), so a host that
persists windows needs no change; an evicted or dropped record joins nothing from then on.

The default keeps everything and installs no hook at all: the join loops pay nothing for the seam.
A new policy is a class implementing `EvictionPolicy` plus one `register_eviction` call; an engine
uses it with `MultiJoin(query, eviction="name")`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from streamjoin.engine.entry import Entry
from streamjoin.engine.window import WindowStore
from streamjoin.query.model import InputDef, QueryDef

__all__ = [
    "EVICTION_POLICIES",
    "EvictionFactory",
    "EvictionPolicy",
    "InsertHook",
    "eviction_hooks",
    "register_eviction",
]


class EvictionPolicy(Protocol):
    """Decide, as a record enters its window, what the window keeps."""

    def on_insert(self, entry: Entry, window: WindowStore) -> bool:
        """Called when `entry` entered `window`; evict with `window.evict`; return False to drop `entry`."""
        ...


EvictionFactory = Callable[[QueryDef, InputDef], "EvictionPolicy | None"]
"""Build the policy of one input's window (None: keep everything)."""

InsertHook = Callable[[Entry], bool]
"""What the schedules call for each released record once it is in its window (its policy's
`on_insert`, bound to the window). False: the policy drops the arriving record, and the schedule
evicts it with `WindowStore.evict`, at once (eager and lazy schedules) or once the other records of
its timestamp were joined with it (a load-shedding schedule)."""

EVICTION_POLICIES: dict[str, EvictionFactory] = {"keep_all": lambda query, inp: None}


def register_eviction(name: str, factory: EvictionFactory) -> None:
    """Register an eviction policy under `name` (for `MultiJoin(..., eviction=name)`)."""
    if name in EVICTION_POLICIES:
        raise ValueError(f"eviction policy {name!r} is already registered")
    EVICTION_POLICIES[name] = factory


def _hook(policy: EvictionPolicy, table: WindowStore) -> InsertHook:
    on_insert = policy.on_insert

    def hook(entry: Entry) -> bool:
        return on_insert(entry, table)

    return hook


def eviction_hooks(
    name: str | None, query: QueryDef, tables: Sequence[WindowStore]
) -> list[InsertHook | None] | None:
    """Return each input's insert hook for the policy `name` (None when no window has a policy)."""
    if name is None:
        return None
    try:
        factory = EVICTION_POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown eviction policy {name!r}; known: {sorted(EVICTION_POLICIES)}") from None
    hooks: list[InsertHook | None] = []
    for inp, table in zip(query.inputs, tables, strict=True):
        policy = factory(query, inp)
        hooks.append(None if policy is None else _hook(policy, table))
    return hooks if any(h is not None for h in hooks) else None
