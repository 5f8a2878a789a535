"""The joiner service: Faust workers running the join operators (the only package importing faust)."""

from streamjoin.joiner.config import WorkerConfig
from streamjoin.joiner.operator import OperatorConfig
from streamjoin.joiner.worker import JoinerWorker

__all__ = ["JoinerWorker", "OperatorConfig", "WorkerConfig"]
