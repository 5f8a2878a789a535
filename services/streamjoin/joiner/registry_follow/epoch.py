"""Tell a registry Redis lost from one with no queries (docs/registry.md, "Durability").

The control plane sets `streamjoin:epoch` with the registry's first write and with every restore
from its log, so a Redis restarted empty has no epoch until the control plane restored it. A worker
checks every snapshot with `RegistryEpoch.admit` before applying it:

>>> from streamjoin.registry import RegistrySnapshot
>>> e = RegistryEpoch()
>>> e.admit(RegistrySnapshot(version=0, streams={}, queries={}), running=False)  # a new registry
'apply'
>>> e.admit(RegistrySnapshot(version=3, streams={}, queries={}, epoch="a"), running=True)
'apply'
>>> e.admit(RegistrySnapshot(version=0, streams={}, queries={}), running=True)  # Redis lost it
'hold'
>>> e.problem
'the registry is being restored (Redis lost it): applying nothing until it is'
>>> e.admit(RegistrySnapshot(version=5, streams={}, queries={}, epoch="b"), running=True)
'replaced'
>>> e.problem is None
True
"""

from __future__ import annotations

from typing import Literal

from streamjoin.registry import RegistrySnapshot

__all__ = ["RegistryEpoch"]

Admission = Literal["apply", "hold", "replaced"]


class RegistryEpoch:
    """The registry epoch a worker applied last, and what a new snapshot means."""

    def __init__(self) -> None:
        self.epoch: str | None = None
        self.problem: str | None = None
        """Why the `registry` health check fails (None: it passes)."""

    def admit(self, snapshot: RegistrySnapshot, *, running: bool) -> Admission:
        """Return what to do with `snapshot` (`running`: the worker runs queries of an earlier one).

        - `hold`: no epoch and no queries, but the worker saw an epoch or runs queries: Redis lost the
          registry; apply nothing (stopping queries, dropping their state) until it is restored.
        - `replaced`: the epoch changed: Redis was replaced (restored empty, or rolled back); apply
          it, and expect the operators' state to be gone or older (they re-claim and check).
        - `apply`: the same registry (or a new one, or one written before epochs existed).
        """
        if snapshot.epoch is None:
            if not snapshot.queries and (self.epoch is not None or running):
                self.problem = "the registry is being restored (Redis lost it): applying nothing until it is"
                return "hold"
            self.problem = None
            return "apply"
        self.problem = None
        before, self.epoch = self.epoch, snapshot.epoch
        return "replaced" if before is not None and before != snapshot.epoch else "apply"
