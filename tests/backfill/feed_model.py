"""The feed of `BackfillJob`, computed in plain Python: what Spark is asked to do, without Spark.

Used by the fast tests to check the plan (ranges, rows history, time buckets, ownership) and the
engine stage over many cases in milliseconds; the Spark tests check that the job computes the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd

from streamjoin.backfill.history import group_key
from streamjoin.backfill.plan import BackfillPlan
from streamjoin.backfill.stage import FEED_COLUMNS, GroupRunner
from streamjoin.engine import MalformedRecord, RecordReader

from .workload import Workload

__all__ = ["feed_rows", "run_model"]


def feed_rows(plan: BackfillPlan, w: Workload, *, kafka_ts: bool = False) -> list[tuple[Any, ...]]:
    """Return the sorted feed rows (`FEED_COLUMNS`) the Spark job should build for `w`."""
    reader = RecordReader(plan.query)
    rows: list[tuple[Any, ...]] = []
    for feed in plan.feeds:
        history: dict[tuple[int, str], list[tuple[float, int, tuple[Any, ...]]]] = {}
        for stream, p, offset, kts, value in w.raw:
            if stream != feed.stream:
                continue
            hint = _hint(value, kts, kafka_ts)
            if hint is None:
                continue
            row = (feed.index, p, offset, hint, kts, value)
            if feed.lower <= hint < plan.end:
                first, last = plan.bucket_span(feed.index, hint)
                rows.extend((plan.group_id(p, b), *row) for b in range(first, last + 1))
            elif feed.rows is not None and hint < plan.start:
                try:
                    _, record = reader.decode(feed.stream, value, kts)
                except MalformedRecord:
                    continue
                gkey = group_key(record.get(feed.partition_by)) if feed.partition_by else ""
                history.setdefault((p, gkey), []).append((hint, offset, row))
        for group in history.values():
            group.sort(key=lambda item: (item[0], item[1]))
            rows.extend((plan.group_id(item[2][1], 0), *item[2]) for item in group[-feed.rows :])  # type: ignore[misc]
    rows.sort(key=lambda r: (r[0], r[4], r[1], r[2], r[3]))  # grp, ts, input, partition, offset
    return rows


def _hint(value: bytes, kts: int, kafka_ts: bool) -> float | None:
    if kafka_ts:
        return float(kts)
    try:
        ts = json.loads(value).get("ts")
    except (ValueError, AttributeError):
        return None
    return float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None


def run_model(
    plan: BackfillPlan, w: Workload, *, batch: int = 97, kafka_ts: bool = False
) -> list[dict[str, Any]]:
    """Run `GroupRunner` over the modelled feed in small batches; return the output records."""
    rows = feed_rows(plan, w, kafka_ts=kafka_ts)
    frame = pd.DataFrame.from_records(rows, columns=list(FEED_COLUMNS))

    def batches() -> Iterator[pd.DataFrame]:
        for i in range(0, len(frame), batch):
            yield frame.iloc[i : i + batch]

    out: list[dict[str, Any]] = []
    for result in GroupRunner(plan).frames(batches()):
        out.extend(json.loads(v) for v in result["value"])
    return out
