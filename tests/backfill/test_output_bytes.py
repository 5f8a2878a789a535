"""The back-fill writes the output record byte for byte as replay (and so the joiner) does."""

from __future__ import annotations

import io
import json
import random

import pandas as pd

from streamjoin.backfill.plan import plan_backfill
from streamjoin.backfill.stage import FEED_COLUMNS, GroupRunner
from streamjoin.query import parse_query
from streamjoin.replay import replay
from streamjoin.testing import Event

from .feed_model import feed_rows
from .workload import Workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}


def test_backfill_and_replay_write_the_same_bytes() -> None:
    query = parse_query(
        {
            "name": "q",
            "inputs": [
                {"stream": s, "topic": t, "timestamp": "ts", "window": {"range": 5}}
                for s, t in TOPICS.items()
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "output": {"topic": "q.out"},
        }
    )
    rng = random.Random(5)
    values = [1.5, 1e-05, 1e20, "\u00e9t\u00e9", "x\x7fy", None, [1, {"z": 0.1}], True]
    w = Workload(dict(TOPICS), 1)
    offsets = dict.fromkeys(TOPICS, 0)
    lines = []
    for i in range(400):
        stream = rng.choice("abc")
        record = {"ts": i // 3 + rng.choice([0, 0.25]), "k": rng.randint(1, 3), "v": rng.choice(values)}
        offset = offsets[stream]
        offsets[stream] += 1
        w.events.append(Event(stream, 0, offset, record["ts"], record))
        w.raw.append((stream, 0, offset, 0, json.dumps(record, separators=(",", ":")).encode()))
        lines.append(json.dumps({"stream": stream, "record": record}) + "\n")
    out = io.StringIO()
    replay(query, lines, out)
    replayed = out.getvalue().splitlines()
    plan = plan_backfill(query, 0, 1_000, target_groups=1, partitions=1)
    frame = pd.DataFrame.from_records(feed_rows(plan, w), columns=list(FEED_COLUMNS))
    backfilled = [v.decode() for f in GroupRunner(plan).frames([frame]) for v in f["value"]]
    assert len(replayed) > 50
    assert sorted(backfilled) == sorted(replayed)
