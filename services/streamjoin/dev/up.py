"""The steps of `streamjoin dev up`, in order: the stack's checks, the services, then the demo.

Its own module because it needs both the checks (`streamjoin.dev.steps`) and the demo's steps
(`streamjoin.dev.demo`), which build on the checks' `DevContext`.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamjoin.dev.demo import (
    ProduceDemoWorkloadStep,
    RegisterDemoQueryStep,
    ShowResultsStep,
    StartControlPlaneStep,
    StartJoinerStep,
)
from streamjoin.dev.steps import BrokerRoundTripStep, CreateTopicsStep, DevStep, RedisRoundTripStep

__all__ = ["default_steps"]


def default_steps(*, demo: bool = True) -> Sequence[DevStep]:
    """Return the steps of `streamjoin dev up`, in order.

    The checks, then the control plane and a joiner worker (the whole stack); with `demo`, also the
    demo streams, query, workload and results (`demo=False`: no demo workload, nothing registered).
    """
    stack: tuple[DevStep, ...] = (
        CreateTopicsStep(),
        BrokerRoundTripStep(),
        RedisRoundTripStep(),
        StartControlPlaneStep(),
        StartJoinerStep(),
    )
    if not demo:
        return stack
    return (*stack, RegisterDemoQueryStep(), ProduceDemoWorkloadStep(), ShowResultsStep())
