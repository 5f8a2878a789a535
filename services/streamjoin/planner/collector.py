"""Live statistics: observe a query's input records, summarise them as `StreamStats`.

Per input: an exponentially decayed arrival rate (event time), and per join field a sliding
HyperLogLog of distinct values (slices merged at read time, so values that left the horizon stop
counting). Window sizes follow from the rate (`rate * T`) or the rows.

The model's `v` is the size of the key domain a stream draws from (selectivity `1/max(v_m, v_n)`
assumes values spread over it), not the values a small window happens to hold: a window of 20
records over 50 keys holds about 17, and planning with 17 misjudges every join with it. So
distinct values are counted over `distinct_horizon` windows (default 8), which sees the domain of
a stationary stream and still forgets keys that stopped arriving.

The collector observes every record whatever the join algorithm: it is the one source of the
planner's distinct counts (the engine's hash index exists only for `hash` queries). Pure: no clock,
no I/O. `rates()` is cheap, `snapshot()` merges sketches: call it when `Replanner.due(rates)` says
so. `merged_snapshot` sums the collectors of several partitions of one query (a joiner worker's).
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Mapping, Sequence
from itertools import islice

from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.stats import ExponentialRate, HyperLogLog, StreamStats
from streamjoin.query.bounds import effective_window
from streamjoin.query.model import QueryDef, RangeWindow, RowsWindow

__all__ = ["SlidingDistinct", "StatsCollector", "merged_rates", "merged_snapshot"]


_PENDING_MAX = 1024
"""Values of the open slice held exactly before they are hashed into its sketch (each once)."""


class SlidingDistinct:
    """Count distinct values over the last `span` positions (time, or record numbers).

    The span is cut into `slices` slices, each a HyperLogLog; a count merges the slices that
    overlap `[now - span, now]`, so it may include up to one slice's worth of older values. The
    merge of the closed slices is cached, so a count costs one merge and one estimate. The newest
    slice's values first go to a set (up to `_PENDING_MAX`), so a value repeated within a slice,
    as join keys are, is hashed once.
    """

    __slots__ = (
        "_closed",
        "_current",
        "_hi",
        "_key",
        "_lo",
        "_pending",
        "_precision",
        "_slices",
        "_span",
        "_width",
    )

    def __init__(self, span: float, slices: int = 4, precision: int = 12) -> None:
        if not span > 0 or slices < 1:
            raise ValueError("need span > 0 and slices >= 1")
        self._span = span
        self._width = span / slices
        self._precision = precision
        self._slices: dict[int, HyperLogLog] = {}
        self._closed: tuple[tuple[int, int], HyperLogLog] | None = None
        self._pending: set[object] = set()
        self._current: HyperLogLog | None = None
        """The newest slice's sketch, number `_key`, covering positions `[_lo, _hi)`."""
        self._key = 0
        self._lo = self._hi = 0.0

    def add(self, value: object, position: float) -> None:
        """Add `value` seen at `position`."""
        if self._lo <= position < self._hi:
            pending = self._pending
            try:
                pending.add(value)
            except TypeError:  # unhashable (a list): straight into the sketch, which hashes its text
                if self._current is not None:  # always, once the bounds are set
                    self._current.add(value)
                return
            if len(pending) >= _PENDING_MAX:
                self._flush()
            return
        self._add_elsewhere(value, position)

    def add_many(self, values: Sequence[object], positions: Sequence[float]) -> None:
        """Add each of `values` seen at the position of the same index: what `add` of each in
        turn adds. Positions in order (a partition's records, mostly) go to the open slice a run at
        a time, each run one C-level set update."""
        n = len(positions)
        if not n:
            return
        if not all(map(operator.le, positions, islice(positions, 1, None))):  # disorder: one by one
            for value, position in zip(values, positions, strict=True):
                self.add(value, position)
            return
        i = 0
        while i < n:
            if not self._lo <= positions[i] < self._hi:  # opens a slice (or an older one's)
                self.add(values[i], positions[i])
                i += 1
                continue
            end = bisect.bisect_left(positions, self._hi, i)  # in order: [i, end) in the open slice
            run = values[i:end]
            try:
                self._pending.update(run)
            except TypeError:  # an unhashable value (a list): one by one (re-adding is harmless)
                for value, position in zip(run, positions[i:end], strict=True):
                    self.add(value, position)
            if len(self._pending) >= _PENDING_MAX:
                self._flush()
            i = end

    def _add_elsewhere(self, value: object, position: float) -> None:
        """Add a value outside the open slice: it opens a newer one, or belongs to an older one."""
        key = math.floor(position / self._width)
        if self._current is not None and key < self._key:  # disorder: an older slice, if still kept
            oldest = math.floor((self._hi - self._span) / self._width)
            if key >= oldest:
                self._slices.setdefault(key, HyperLogLog(self._precision)).add(value)
            return
        self._flush()
        sketch = self._slices.get(key)
        if sketch is None:
            sketch = self._slices[key] = HyperLogLog(self._precision)
            oldest = math.floor((position - self._span) / self._width)
            for old in [k for k in self._slices if k < oldest]:
                del self._slices[old]
        self._current, self._key = sketch, key
        self._lo, self._hi = key * self._width, (key + 1) * self._width
        if self._lo <= position < self._hi:
            self.add(value, position)
        else:  # rounding put it at the slice's edge
            sketch.add(value)

    def _flush(self) -> None:
        """Hash the pending values into the open slice's sketch."""
        if self._pending and self._current is not None:
            self._current.add_many(self._pending)
            self._pending.clear()

    def count(self, now: float) -> float:
        """Return the estimated distinct values in the span ending at `now`."""
        sketch = self.sketch(now)
        return sketch.count() if sketch is not None else 0.0

    def sketch(self, now: float) -> HyperLogLog | None:
        """Return the values of the span ending at `now` as one sketch (None: none seen)."""
        self._flush()
        oldest = math.floor((now - self._span) / self._width)
        keys = sorted(k for k in self._slices if k >= oldest)
        if not keys:
            return None
        newest = keys[-1]
        span = (keys[0], newest)
        if self._closed is None or self._closed[0] != span:
            closed = HyperLogLog(self._precision)
            for k in keys[:-1]:
                closed.merge(self._slices[k])
            self._closed = (span, closed)
        merged = self._closed[1].copy()
        merged.merge(self._slices[newest])  # the open slice still changes: never cached
        return merged


_MISSING = object()


class _Input:
    __slots__ = ("by_time", "count", "counters", "distinct", "fields", "rate", "window")

    def __init__(
        self, window: RangeWindow | RowsWindow, fields: tuple[str, ...], half_life: float, horizon: float
    ) -> None:
        self.window = window
        self.fields = fields
        self.rate = ExponentialRate(half_life)
        self.count = 0
        span = window.range if isinstance(window, RangeWindow) else float(window.rows)
        self.distinct = {f: SlidingDistinct(span * horizon, slices=max(4, round(horizon))) for f in fields}
        self.counters = tuple(self.distinct.items())
        self.by_time = isinstance(window, RangeWindow)


class StatsCollector:
    """Observe a query's input records and summarise them as per-stream `StreamStats`."""

    def __init__(
        self, query: QueryDef, *, half_life: float | None = None, distinct_horizon: float = 8.0
    ) -> None:
        """Collect for `query`.

        Args:
            query: the query whose inputs and join fields are observed.
            half_life: of the decayed rates, in timestamp units; default half the largest range
                window (1000 if every window counts rows).
            distinct_horizon: distinct values are counted over this many windows.
        """
        if distinct_horizon <= 0:
            raise ValueError("distinct_horizon must be > 0")
        half = half_life if half_life is not None else (query.largest_window / 2 or 1000.0)
        graph = JoinGraph.from_query(query)
        self._inputs: dict[str, _Input] = {}
        for inp in query.inputs:
            fields = tuple(
                sorted({f for c in range(len(graph.classes)) for f in graph.fields(inp.stream, c)})
            )
            window = effective_window(query, inp.stream)
            self._inputs[inp.stream] = _Input(window, fields, half, distinct_horizon)
        self._now: float | None = None
        self.query = query

    def fields(self, stream: str) -> tuple[str, ...]:
        """Return the join fields of `stream` whose distinct values are counted."""
        return self._inputs[stream].fields

    def observe(self, stream: str, record: Mapping[str, object], ts: float) -> None:
        """Count one record of `stream` at event time `ts`."""
        inp = self._inputs[stream]
        inp.rate.observe(ts)
        inp.count += 1
        position = ts if inp.by_time else float(inp.count)
        for f, distinct in inp.counters:
            value = record.get(f, _MISSING)
            if value is not _MISSING:
                distinct.add(value, position)
        now = self._now
        if now is None or ts > now:
            self._now = ts

    def observe_many(
        self, stream: str, records: Sequence[Mapping[str, object]], timestamps: Sequence[float]
    ) -> None:
        """Count records of `stream` (`records[i]` at event time `timestamps[i]`): what `observe`
        of each in turn counts, batched (a batch's records of one input, as the joiner reads them)."""
        inp = self._inputs[stream]
        if not inp.by_time or not timestamps:  # a rows window counts positions one by one
            for record, ts in zip(records, timestamps, strict=True):
                self.observe(stream, record, ts)
            return
        inp.rate.observe_many(timestamps)
        inp.count += len(timestamps)
        for f, distinct in inp.counters:
            values = list(map(operator.methodcaller("get", f, _MISSING), records))
            if _MISSING in values:
                kept = [i for i, value in enumerate(values) if value is not _MISSING]
                distinct.add_many([values[i] for i in kept], [timestamps[i] for i in kept])
            else:
                distinct.add_many(values, timestamps)
        newest = max(timestamps)
        if self._now is None or newest > self._now:
            self._now = newest

    def rates(self, now: float | None = None) -> dict[str, float]:
        """Return each input's estimated rate at event time `now` (default: the newest record)."""
        at = now if now is not None else self._now
        return {name: inp.rate.rate(at) for name, inp in self._inputs.items()}

    @property
    def newest(self) -> float | None:
        """Return the newest event time observed (None before the first record)."""
        return self._now

    def snapshot(self, now: float | None = None) -> dict[str, StreamStats]:
        """Return the statistics of every input at event time `now` (default: the newest record)."""
        return merged_snapshot([self], now)

    def sketches(self, now: float) -> dict[str, dict[str, HyperLogLog]]:
        """Return, per input and join field, the sketch of the values over the horizon ending at `now`."""
        out: dict[str, dict[str, HyperLogLog]] = {}
        for name, inp in self._inputs.items():
            position = now if isinstance(inp.window, RangeWindow) else float(inp.count)
            fields = out[name] = {}
            for f, d in inp.distinct.items():
                sketch = d.sketch(position)
                if sketch is not None:
                    fields[f] = sketch
        return out


def merged_rates(collectors: Sequence[StatsCollector]) -> dict[str, float] | None:
    """Return each input's rate summed over `collectors` at their newest event time (None: no data)."""
    seen = [c.newest for c in collectors if c.newest is not None]
    if not seen:
        return None
    now = max(seen)
    totals: dict[str, float] = {}
    for collector in collectors:
        for name, rate in collector.rates(now).items():
            totals[name] = totals.get(name, 0.0) + rate
    return totals


def merged_snapshot(collectors: Sequence[StatsCollector], now: float | None = None) -> dict[str, StreamStats]:
    """Return the statistics of a query whose partitions `collectors` observed (at least one).

    Rates add up; distinct values are the union of the partitions' sketches (a key seen on two
    partitions counts once), both at event time `now` (default: the newest record of any of them).
    """
    if not collectors:
        raise ValueError("merged_snapshot needs at least one collector")
    newest = [c.newest for c in collectors if c.newest is not None]
    at = now if now is not None else max(newest, default=0.0)
    query = collectors[0].query
    rates = {inp.stream: 0.0 for inp in query.inputs}
    unions: dict[str, dict[str, HyperLogLog]] = {inp.stream: {} for inp in query.inputs}
    for collector in collectors:
        for name, rate in collector.rates(at).items():
            rates[name] += rate
        for name, fields in collector.sketches(at).items():
            for f, sketch in fields.items():
                union = unions[name].get(f)
                if union is None:
                    unions[name][f] = sketch.copy()
                else:
                    union.merge(sketch)
    out: dict[str, StreamStats] = {}
    for inp in query.inputs:
        name, window = inp.stream, effective_window(query, inp.stream)
        counts = {f: 1.0 for f in collectors[0].fields(name)}
        counts.update({f: max(1.0, sketch.count()) for f, sketch in unions[name].items()})
        out[name] = StreamStats(
            name=name,
            rate=rates[name],
            window=window.range if isinstance(window, RangeWindow) else None,
            rows=window.rows if isinstance(window, RowsWindow) else None,
            distinct=max(counts.values(), default=1.0),
            distinct_fields=counts,
        )
    return out
