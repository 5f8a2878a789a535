"""The join engine: pure Python, no I/O. The joiner, the replay CLI and the Spark back-fill share it."""

from streamjoin.engine import invalidation as _invalidation  # noqa: F401 (registers probe, probe_insert, probe_all)
from streamjoin.engine import window_models as _window_models  # noqa: F401 (registers strict windows and W-join)
from streamjoin.engine.entry import Entry
from streamjoin.engine.ingest import MalformedRecord, RecordReader
from streamjoin.engine.multijoin import MultiJoin, Result, default_plan
from streamjoin.engine.output import ResultFormatter
from streamjoin.engine.plan import JoinPlan
from streamjoin.engine.stats import WindowStats
from streamjoin.engine.tuning import tune_gc
from streamjoin.engine.window import MemoryWindowTable, WindowStore

__all__ = [
    "Entry",
    "JoinPlan",
    "MalformedRecord",
    "MemoryWindowTable",
    "MultiJoin",
    "RecordReader",
    "Result",
    "ResultFormatter",
    "WindowStats",
    "WindowStore",
    "default_plan",
    "tune_gc",
]
