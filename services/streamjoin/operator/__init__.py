"""A query's operator: its engine, the statistics its records feed, and the planning that orders it.

`OperatorFactory` builds operators the same way for the joiner, `streamjoin replay` and the Spark
back-fill (docs/planner.md, "Hosts").
"""

from streamjoin.operator.factory import REPLAN_EVERY, OperatorFactory
from streamjoin.operator.join import JoinOperator
from streamjoin.operator.planning import QueryPlanner

__all__ = ["REPLAN_EVERY", "JoinOperator", "OperatorFactory", "QueryPlanner"]
