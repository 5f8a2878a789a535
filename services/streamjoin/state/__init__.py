"""Durable operator state: what a join operator commits per batch, and the stores that keep it.

`base` defines the contract (`StateStore`, `Checkpoint`, `CommitBatch`); `redis` implements it with
one Lua script per batch. Only this package and `streamjoin.registry` import `redis`.
"""

from streamjoin.state.base import (
    Checkpoint,
    CommitBatch,
    FencedError,
    OutboxState,
    StateStore,
    StateUnavailableError,
)

__all__ = [
    "Checkpoint",
    "CommitBatch",
    "FencedError",
    "OutboxState",
    "StateStore",
    "StateUnavailableError",
]
