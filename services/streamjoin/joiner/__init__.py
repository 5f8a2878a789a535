"""The joiner service: Faust workers running the join operators (the only package importing faust).

One sub-package per concept, importing one way (docs/joiner.md, "Where the code lives").
"""

from streamjoin.joiner.config import WorkerConfig
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.worker.worker import JoinerWorker

__all__ = ["JoinerWorker", "OperatorConfig", "WorkerConfig"]
