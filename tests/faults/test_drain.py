"""The fault runner's drain (`bench/soak/drain.py`): when every produced record went through an
operator, directly or re-keyed, and how it gives up (with what is behind) when nothing moves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import pytest
from bench.soak.drain import Drained, InputPositions, drain

STREAMS = {"a": "in.a"}
WANT = {("in.a", 0): 10, ("in.a", 1): 5}


class _Cluster:
    """Positions that follow a script, one state per poll (the last one stays)."""

    def __init__(self, script: list[InputPositions], ends: Mapping[tuple[str, int], int]) -> None:
        self.script, self.ends, self.polls = script, dict(ends), 0

    def positions(self, streams: Mapping[str, str]) -> InputPositions:
        assert streams == STREAMS
        self.polls += 1
        return self.script[min(self.polls, len(self.script)) - 1]

    def end_offsets(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {tp: self.ends[tp] for tp in tps}


def _run(cluster: _Cluster, *, stall_s: float = 5.0, deadline_s: float = 10.0) -> Drained:
    return asyncio.run(
        drain(cluster, STREAMS, WANT, 2, deadline=time.monotonic() + deadline_s, stall_s=stall_s)
    )


def test_inputs_read_directly_are_drained_when_their_offsets_reach_what_was_produced() -> None:
    behind = InputPositions({("in.a", 0): 10, ("in.a", 1): 4}, {})
    done = InputPositions({("in.a", 0): 10, ("in.a", 1): 5}, {})
    cluster = _Cluster([behind, done], {})
    assert _run(cluster) == Drained({}, "")
    assert cluster.polls == 2


def test_rekeyed_inputs_need_the_repartitioners_and_then_the_internal_topics_at_their_end() -> None:
    ends = {("int.a", 0): 8, ("int.a", 1): 7}
    repartitioned = {("in.a", 0): 10, ("in.a", 1): 5}
    script = [
        InputPositions(
            {("int.a", 0): 8, ("int.a", 1): 7}, {("in.a", 0): 10, ("in.a", 1): 3}
        ),  # source behind
        InputPositions({("int.a", 0): 8, ("int.a", 1): 6}, repartitioned),  # an internal partition behind
        InputPositions({("int.a", 0): 8}, repartitioned),  # an operator not started: not drained
        InputPositions({("int.a", 0): 8, ("int.a", 1): 7}, repartitioned),
    ]
    cluster = _Cluster(script, ends)
    assert _run(cluster) == Drained({}, "")
    assert cluster.polls == 4


def test_no_progress_for_stall_s_stops_the_wait_with_what_is_behind() -> None:
    stuck = InputPositions({("int.a", 0): 8, ("int.a", 1): 2}, {("in.a", 0): 10, ("in.a", 1): 5})
    began = time.monotonic()
    out = _run(_Cluster([stuck], {("int.a", 0): 8, ("int.a", 1): 7}), stall_s=1.0, deadline_s=30.0)
    assert out == Drained({"int.a[1]": [2, 7]}, "no offset moved for 1 s")
    assert time.monotonic() - began < 5.0


def test_more_committed_than_produced_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="more input committed than produced"):
        _run(_Cluster([InputPositions({("in.a", 0): 11, ("in.a", 1): 5}, {})], {}))
