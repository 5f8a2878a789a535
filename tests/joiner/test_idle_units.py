"""The joiner's idle timeouts in memory (docs/queries.md, "Idle timeout"): when input resumes after
every partition was idle, each one's timeout starts over, for direct inputs (`IdleTracker`) and the
source partitions of re-keyed ones (`RekeyedReader`).

The engine clears every idle flag on the first arrival after an idle flush; a tracker that still
believed a quiet partition idle would never flag it again, and that partition would hold the
watermark for good.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.engine import MultiJoin
from streamjoin.joiner.idle import IdleTracker
from streamjoin.joiner.rekeyed import RekeyedInput, RekeyedReader, RekeySetup
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 10}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)
LIMIT_MS = 1_000


@dataclass(frozen=True)
class TP:
    topic: str
    partition: int


def test_direct_inputs_time_out_again_after_input_resumes() -> None:
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0]})
    tracker = IdleTracker(
        engine.set_idle,
        engine.is_idle,
        0,
        {"t.a": [("a", 0)], "t.b": [("b", 1)]},
        ["a", "b"],
        LIMIT_MS,
        now=0.0,
    )
    engine.add("a", {"ts": 10, "k": 1}, ts=10, offset=0)
    engine.add("b", {"ts": 12, "k": 1}, ts=12, offset=0)
    assert tracker.update([], now=1.5)  # both quiet for longer than the timeout
    assert engine.is_idle("a", 0) and engine.is_idle("b", 0) and engine.watermark == 12
    # a's next burst begins: the engine makes b hold the watermark again...
    tracker.update([TP("t.a", 0)], now=10.0)
    engine.add("a", {"ts": 20, "k": 1}, ts=20, offset=1)
    assert not engine.is_idle("b", 0) and engine.watermark == 12
    # ...and b's timeout starts over then: not idle half a timeout later, idle after a full one.
    tracker.update([], now=10.1)
    tracker.update([TP("t.a", 0)], now=10.6)
    assert not engine.is_idle("b", 0)
    assert tracker.update([], now=11.2)
    assert engine.is_idle("b", 0) and engine.watermark == 20 - QUERY.lateness


def test_rekeyed_source_partitions_time_out_again_after_input_resumes() -> None:
    setup = RekeySetup((RekeyedInput("b", "t.b", "internal.b", 2),), b"1.1", _positioned)
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0, 1]})
    reader = RekeyedReader(
        setup,
        {},
        observe=engine.observe,
        set_idle=engine.set_idle,
        is_idle=engine.is_idle,
        idle_ms=LIMIT_MS,
        now=0.0,
    )
    engine.add("a", {"ts": 10, "k": 1}, ts=10, offset=0)
    engine.add("b", {"ts": 11, "k": 1}, ts=11, partition=0, offset=0)
    engine.add("b", {"ts": 12, "k": 1}, ts=12, partition=1, offset=0)
    engine.set_idle("a", 0, True)
    assert reader.update_idle(now=1.5)
    assert engine.watermark == 12  # every partition idle: flushed
    engine.add("b", {"ts": 20, "k": 1}, ts=20, partition=0, offset=1)  # input resumes at source 0
    assert not engine.is_idle("b", 1)
    assert not reader.update_idle(now=10.0)  # source 1's timeout starts over now
    assert not engine.is_idle("b", 1) and engine.watermark == 12
    assert reader.update_idle(now=11.1)
    assert engine.is_idle("b", 1)


async def _positioned() -> bool:
    return True
