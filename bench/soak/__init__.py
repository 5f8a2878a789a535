"""Fault scenarios and the soak: the joiner under load and faults, its output against the oracle.

`python -m bench.soak --help` runs the long one; `tests/faults/` runs short ones in CI. The pieces:
`workload.py` (the records and the poison), `faults.py` (what can go wrong, and the issue's
schedule), `cluster.py` (broker, Redis, workers), `producer.py` (the paced producer), `scenario.py` (the
runner), `oracle.py` (the comparison), `lag.py` (whether the lag stayed flat) and `pauses.py` (how
long results paused around a fault). `python -m bench.soak.broker_crash` crashes Apache Kafka
brokers (`broker_crash.py`). `group_stall.py`
and `leader_leaves.py` reproduce the embedded broker's group stalls with aiokafka alone.
"""

from bench.soak.faults import (
    BrokerCrash,
    BrokerFreeze,
    Fault,
    Freeze,
    Kill,
    RedisCrash,
    Restart,
    standard_schedule,
)
from bench.soak.scenario import Progress, Report, Scenario, ScenarioError, run_scenario
from bench.soak.workload import POISON_KINDS, WorkloadSpec

__all__ = [
    "POISON_KINDS",
    "BrokerCrash",
    "BrokerFreeze",
    "Fault",
    "Freeze",
    "Kill",
    "Progress",
    "RedisCrash",
    "Report",
    "Restart",
    "Scenario",
    "ScenarioError",
    "WorkloadSpec",
    "run_scenario",
    "standard_schedule",
]
