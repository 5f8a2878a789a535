"""Hold what runs in the slots a rebalance revoked (docs/joiner.md, "Rebalances").

The group's eager protocol revokes every slot before it assigns them again, mostly to the same
worker; holding instead of stopping keeps what comes back running without a restart
(`operators.hold`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.operators.operator import PartitionOperator
from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.joiner.repartition.repartitioner import RekeyJob
from streamjoin.joiner.repartition.repartitioners import JobKey, Repartitioners

__all__ = ["OpKey", "hold", "release"]

_log = logging.getLogger(__name__)
OpKey = tuple[str, int]
"""(query, partition)."""


async def hold(
    ops: Mapping[OpKey, PartitionOperator],
    rekeyers: Repartitioners,
    jobs: list[JobKey],
    stop: Callable[[list[OpKey]], Awaitable[None]],
    publisher: Publisher | None,
    config: OperatorConfig,
) -> None:
    """Hold `ops` and the repartitioners of `jobs` (those of the revoked slots) at once, until nothing
    of theirs is in flight; `stop` the operators (and stop the repartitioners) that do not settle within
    the stop timeout, then flush the producer (bounded by the stop timeout)."""
    began = time.monotonic()
    for op in ops.values():
        op.hold()
    settled, _ = await asyncio.gather(
        asyncio.gather(*(op.settled() for op in ops.values())), rekeyers.hold(jobs)
    )
    unsettled = [key for key, ok in zip(ops, settled, strict=True) if not ok]
    await stop(unsettled)
    if publisher is not None and (left := await publisher.flush(config.stop_timeout_ms)):
        _log.warning("%d output records still unacknowledged after a revoke", left)
    _log.info(
        "revoked: held %d operators and %d repartitioners in %.2f s (%d stopped, unsettled)",
        len(ops) - len(unsettled), len(jobs), time.monotonic() - began, len(unsettled),
    )  # fmt: skip


def release(ops: Iterable[PartitionOperator], rekeyers: Repartitioners, jobs: Iterable[RekeyJob]) -> int:
    """Let the held `ops` and the held repartitioners of `jobs` go on (the assignment gave their
    slots back); return how many operators were held."""
    held = [op for op in ops if op.held]
    for op in held:
        op.release()
    rekeyers.release(rekeyers.key(job) for job in jobs)
    return len(held)
