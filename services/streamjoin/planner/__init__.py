"""The join planner: Golab & Özsu's cost model, heuristics and re-planning (pure, no I/O)."""

from streamjoin.planner.cost import CostModel
from streamjoin.planner.planner import Planner, PlannerOptions
from streamjoin.planner.replan import Replanner
from streamjoin.planner.stats import StreamStats

__all__ = ["CostModel", "Planner", "PlannerOptions", "Replanner", "StreamStats"]
