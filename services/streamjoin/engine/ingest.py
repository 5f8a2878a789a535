"""Turn an arriving value into (timestamp, record), or say precisely why it is malformed.

A record that is not a JSON object, or lacks the timestamp or a join field,
is malformed: counted, dead-lettered with the reason, and never stops a worker. The replay CLI, the
joiner and the back-fill all read records through this one class.
"""

from __future__ import annotations

import json
import math
from typing import Any

from streamjoin.engine.program import index_fields
from streamjoin.query.model import QueryDef

__all__ = ["MalformedRecord", "RecordReader"]


class MalformedRecord(ValueError):
    """A record the query cannot use; the message is the reason given to the dead-letter topic."""


class RecordReader:
    """Validate the records of one query's inputs."""

    def __init__(self, query: QueryDef) -> None:
        self.query = query
        self._timestamp = {i.stream: i.timestamp for i in query.inputs}
        # Equi-join attributes are required (a record without one could never be bucketed); fields
        # of theta predicates and filters may be missing: the predicate is then simply false.
        self._required = {s: tuple(fields) for s, fields in index_fields(query).items()}

    def decode(
        self, stream: str, raw: bytes | str | None, kafka_ts: float | None = None
    ) -> tuple[float, dict[str, Any]]:
        """Parse a raw Kafka value (UTF-8 JSON) and validate it; see `read`."""
        if raw is None:
            raise MalformedRecord("empty value (tombstone)")
        try:
            value = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedRecord(f"not JSON: {exc}") from None
        return self.read(stream, value, kafka_ts)

    def read(self, stream: str, value: Any, kafka_ts: float | None = None) -> tuple[float, dict[str, Any]]:
        """Return (timestamp, record) for a decoded value of input `stream`."""
        if not isinstance(value, dict):
            raise MalformedRecord(f"not a JSON object but {type(value).__name__}")
        field = self._timestamp[stream]
        if field is None:
            if kafka_ts is None:
                raise MalformedRecord("no Kafka timestamp and no timestamp field configured")
            ts: Any = kafka_ts
        else:
            if field not in value:
                raise MalformedRecord(f"missing timestamp field {field!r}")
            ts = value[field]
            # exact types, as JSON decodes them: `bool` (a subclass of int) is not a timestamp
            if type(ts) is not int and (type(ts) is not float or not math.isfinite(ts)):
                raise MalformedRecord(f"timestamp field {field!r} is not a finite number: {ts!r}")
        for name in self._required[stream]:
            key = value.get(name)
            if key is None:
                raise MalformedRecord(f"missing join field {name!r}")
            if isinstance(key, (dict, list)):
                raise MalformedRecord(f"join field {name!r} is not a scalar")
        return ts, value
