"""Turn an arriving value into (timestamp, record), or say precisely why it is malformed.

A record that is not a JSON object, or lacks the timestamp or a join field,
is malformed: counted, dead-lettered with the reason, and never stops a worker. The replay CLI, the
joiner and the back-fill all read records through this one class, so they apply the same rules:

- the timestamp is a JSON number (not `true`), finite, and within `TIMESTAMP_LIMIT` of zero;
- `NaN`, `Infinity` and numbers too large for a double are not JSON (`loads_record`), so they never
  reach an output record as bare tokens;
- an equi-join attribute is a string or a number, not an object, an array or a boolean (Python's
  `True == 1` would otherwise join JSON `true` with `1`);
- a timestamp more than `max_future` ahead of the newest one its input has shown (over its
  partitions, not counting the first record of each) is refused, so one record cannot move the
  clock past every later one; the caller passes the bound (`RecordReader.horizon`) to `read`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn

from streamjoin.engine.edges import index_fields
from streamjoin.query.model import QueryDef

__all__ = [
    "DEFAULT_MAX_FUTURE",
    "TIMESTAMP_LIMIT",
    "MalformedRecord",
    "RecordReader",
    "loads_record",
]

TIMESTAMP_LIMIT = 2**53
"""The largest timestamp magnitude accepted: every integer up to it is exact as a double (in ms,
285,000 years either side of 1970)."""

DEFAULT_MAX_FUTURE = 7 * 86_400_000
"""How far (in the query's timestamp unit, read as ms: 7 days) a record may be ahead of the newest
timestamp its input has shown before it is dead-lettered; the `max_future` setting overrides it."""


class MalformedRecord(ValueError):
    """A record the query cannot use; the message is the reason given to the dead-letter topic."""


def _constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]!r} is too large for a double")
    return value


def loads_record(raw: bytes | str) -> Any:
    """Parse strict JSON: no `NaN`/`Infinity`, no number that overflows a double; MalformedRecord if not.

    >>> loads_record(b'{"a": 1}')
    {'a': 1}
    >>> loads_record(b'{"a": NaN}')
    Traceback (most recent call last):
    ...
    streamjoin.engine.ingest.MalformedRecord: not JSON: NaN is not JSON
    """
    try:
        return json.loads(raw, parse_constant=_constant, parse_float=_finite)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedRecord(f"not JSON: {exc}") from None
    except ValueError as exc:  # our hooks, or an integer of more than 4,300 digits
        raise MalformedRecord(f"not JSON: {exc}") from None
    except RecursionError:
        raise MalformedRecord("not JSON: nested too deep") from None


class RecordReader:
    """Validate the records of one query's inputs, and keep what each input has shown.

    `max_future` bounds how far ahead of the newest timestamp its input has shown a record may be
    (Flink's bounded out-of-orderness, the other way round); None: no bound. The bound is measured
    from the input itself, never from the watermark (which trails by `lateness`), and never from
    the first record of a partition: one early record, however old, bounds nothing. A host reads
    every input through one reader: it passes `horizon(stream)` to `read`, and tells `shown` the
    partition and timestamp of each record `read` returned.
    """

    def __init__(self, query: QueryDef, *, max_future: float | None = DEFAULT_MAX_FUTURE) -> None:
        self.query = query
        self.max_future = max_future
        self._timestamp = {i.stream: i.timestamp for i in query.inputs}
        # Equi-join attributes are required (a record without one could never be bucketed); fields
        # of theta predicates and filters may be missing: the predicate is then simply false.
        self._required = {s: tuple(fields) for s, fields in index_fields(query).items()}
        self._started: set[tuple[str, int]] = set()  # (input, partition) that have shown a record
        self._newest: dict[str, float] = {}  # per input, not counting the first of each partition
        self._limit: dict[str, float] = {}  # per input, the newest plus `max_future`

    def shown(self, stream: str, partition: int, ts: float) -> None:
        """Note that `partition` of input `stream` has shown a valid record at `ts` (one `read`
        accepted); the first record of each partition is not counted."""
        key = (stream, partition)
        if key not in self._started:
            self._started.add(key)
            return
        self._raise(stream, ts)

    def _raise(self, stream: str, ts: float) -> None:
        newest = self._newest.get(stream)
        if newest is None or ts > newest:
            self._newest[stream] = ts
            if self.max_future is not None:
                self._limit[stream] = ts + self.max_future

    def newest(self, stream: str) -> float | None:
        """Return the newest timestamp `stream` has shown (`shown`), or None while it has none."""
        return self._newest.get(stream)

    def newest_by_input(self) -> dict[str, float]:
        """Return the newest timestamp of every input that has shown one: what a checkpoint keeps
        for the reader of a later process (`resume`)."""
        return dict(self._newest)

    def resume(self, newest: Mapping[str, float]) -> None:
        """Continue from what an earlier reader of the same inputs had shown (`newest_by_input`,
        from a checkpoint; later timestamps this reader has shown stay).

        A fresh reader bounds nothing until an input has shown a second record of a partition, so
        without this a record far ahead read first after a restart would be accepted: its
        partition's clock would jump, stop holding the watermark back, and its later records would
        arrive late."""
        for stream, ts in newest.items():
            if stream in self._timestamp:
                self._raise(stream, ts)

    def horizon(self, stream: str, slack: float = 0.0) -> float:
        """Return the largest timestamp accepted next on `stream`: `max_future` (plus `slack`) past
        the newest timestamp it has shown, or infinity while it has none (or without a bound)."""
        return self._limit.get(stream, math.inf) + slack

    def decode(
        self, stream: str, raw: bytes | str | None, kafka_ts: float | None = None, horizon: float = math.inf
    ) -> tuple[float, dict[str, Any]]:
        """Parse a raw Kafka value (UTF-8 JSON, `loads_record`) and validate it; see `read`."""
        if raw is None:
            raise MalformedRecord("empty value (tombstone)")
        return self.read(stream, loads_record(raw), kafka_ts, horizon)

    def read(
        self, stream: str, value: Any, kafka_ts: float | None = None, horizon: float = math.inf
    ) -> tuple[float, dict[str, Any]]:
        """Return (timestamp, record) for a decoded value of input `stream`.

        `horizon`: the largest timestamp accepted (`RecordReader.horizon`); a later one is refused.
        """
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
                raise MalformedRecord(f"timestamp field {field!r} is not a finite number: {_short(ts)}")
        if not -TIMESTAMP_LIMIT <= ts <= TIMESTAMP_LIMIT or ts > horizon:
            self._refuse_timestamp(stream, ts)
        for name in self._required[stream]:
            key = value.get(name)
            kind = type(key)
            if kind is not str and kind is not int:  # the common keys pass two identity tests
                _check_key(name, key)
        return ts, value

    def _refuse_timestamp(self, stream: str, ts: float) -> NoReturn:
        if not -TIMESTAMP_LIMIT <= ts <= TIMESTAMP_LIMIT:
            raise MalformedRecord(f"timestamp {_short(ts)} is out of range (beyond +-2**53)")
        raise MalformedRecord(
            f"timestamp {_short(ts)} is more than max_future={self.max_future} ahead of the newest "
            f"timestamp of input {stream!r} ({_short(self.newest(stream))})"
        )


def _check_key(name: str, key: Any) -> None:
    """Refuse a join attribute that is missing, not a scalar, a boolean or not finite."""
    if key is None:
        raise MalformedRecord(f"missing join field {name!r}")
    if isinstance(key, (dict, list)):
        raise MalformedRecord(f"join field {name!r} is not a scalar")
    if type(key) is bool:
        raise MalformedRecord(f"join field {name!r} is a boolean ({_short(key)}): not a join key")
    if type(key) is float and not math.isfinite(key):
        raise MalformedRecord(f"join field {name!r} is not a finite number")


def _short(value: Any) -> str:
    """Return `value` as JSON, cut to 40 characters (a 10**400 timestamp is not a reason's length)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
