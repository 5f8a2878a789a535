"""The Redis state store: one Lua script per batch commits an operator's delta, offsets and outbox."""

from streamjoin.state.redis.checkpoint_store import RedisStateStore
from streamjoin.state.redis.keys import StateKeys

__all__ = ["RedisStateStore", "StateKeys"]
