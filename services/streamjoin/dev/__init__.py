"""The embedded stack: the real broker and Redis (and later the services) as local subprocesses.

Used by `streamjoin dev up`, by the pytest fixtures in `streamjoin.dev.pytest_plugin`, and by anyone on
a laptop. Everything listens on free loopback ports and is stopped, with its whole process group,
when the stack stops.
"""

from streamjoin.dev.broker import EmbeddedBroker
from streamjoin.dev.process import ManagedProcess, ProcessExitedError, ReadinessTimeoutError
from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.dev.stack import EmbeddedService, EmbeddedStack

__all__ = [
    "EmbeddedBroker",
    "EmbeddedRedis",
    "EmbeddedService",
    "EmbeddedStack",
    "ManagedProcess",
    "ProcessExitedError",
    "ReadinessTimeoutError",
]
