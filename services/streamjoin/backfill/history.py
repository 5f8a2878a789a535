"""Decode the rows-window history before a back-fill's start exactly as the engine would. No Spark here.

A rows window holds the last `N` records of each (topic partition, `partition_by` value) group, and
only records the engine accepts count (a malformed record never enters a window). So before Spark
keeps the last `N` records per group, each history record is read with the engine's own
`RecordReader` (an Avro input's with the joiner's Avro decoder first; malformed ones are dropped) and
given its group key with Python's equality: the engine's groups are dict keys, where `1`, `1.0` and
`true` are one value and `"1"` another.

>>> group_key(1), group_key(1.0), group_key(True), group_key("1"), group_key(None), group_key(2.5)
('n:1', 'n:1', 'n:1', 's:1', 'null', 'n:2.5')
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from streamjoin.backfill.codecs import input_codecs
from streamjoin.backfill.plan import BackfillPlan
from streamjoin.engine import MalformedRecord, RecordReader, ResultFormatter
from streamjoin.schema_registry import SchemaRegistry

__all__ = ["HISTORY_COLUMNS", "HistoryDecoder", "group_key"]

HISTORY_COLUMNS = ("input", "opart", "partition", "offset", "ts", "kafka_ts", "value", "gkey")
"""Columns of a decoded history record (`opart` its operator partition, `ts` exact, `gkey` the rows
group within the (operator partition, source partition))."""


def group_key(value: Any) -> str:
    """Return a string equal for two `partition_by` values exactly when Python finds them equal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return f"n:{value}"
    if isinstance(value, float):
        return f"n:{int(value)}" if value.is_integer() else f"n:{value!r}"
    if isinstance(value, str):
        return f"s:{value}"
    return "j:" + json.dumps(value, sort_keys=True)


class HistoryDecoder:
    """Keep the valid history records of rows inputs and key them by rows group."""

    def __init__(
        self, plan: BackfillPlan, *, registry_url: str | None = None, registry: SchemaRegistry | None = None
    ) -> None:
        self._reader = RecordReader(plan.query)
        formatter = ResultFormatter(plan.query)
        self._decode = [
            d for d, _ in input_codecs(plan.query, self._reader, formatter, registry, registry_url)
        ]
        self._names = plan.query.stream_names
        self._partition_by = {f.index: f.partition_by for f in plan.feeds}

    def frames(self, batches: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """Decode each batch; yield the valid records as frames of `HISTORY_COLUMNS`."""
        for batch in batches:
            rows: list[tuple[Any, ...]] = []
            names = ("input", "opart", "partition", "offset", "kafka_ts", "value")
            columns = [batch[name].tolist() for name in names]
            for index, opart, partition, offset, kafka_ts, value in zip(*columns, strict=True):
                kts = None if kafka_ts is None or kafka_ts != kafka_ts else int(kafka_ts)
                try:
                    ts, record = self._decode[index](self._names[index], value, kts, math.inf)
                except MalformedRecord:
                    continue
                field = self._partition_by[index]
                gkey = group_key(record.get(field)) if field is not None else ""
                rows.append((index, opart, partition, offset, float(ts), kts, value, gkey))
            if rows:
                yield pd.DataFrame.from_records(rows, columns=list(HISTORY_COLUMNS))
