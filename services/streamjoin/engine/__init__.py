"""The join engine: pure Python, no I/O. The joiner, the replay CLI and the Spark back-fill share it."""

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
