"""Load shedding under a memory budget with importance semantics (Ojewole, Zhu & Hou).

- `SheddingPolicy` (`policy`): the decision API the engine's shedding schedule calls; the six
  built-in policies (`policies`) register themselves in `POLICIES`; `make_policy` builds one.
- `WindowShedder` (`runtime`): a policy and the windows' share, for the engine's shedding schedule.
- `ShedEntry`, `EntryFactory` (`entry`): what a policy sees of a record.
- `simulate` (`simulate`): the reference simulator of the paper's discrete-time model.
- `optimum` (`optimum`, `odja`, `flow`): the offline optimum; `evaluate`: the shed-eval report.
"""

from streamjoin.shedding import policies as _policies  # registers the built-in policies
from streamjoin.shedding.entry import COMBINE, BadImportance, EntryFactory, ShedEntry
from streamjoin.shedding.evaluate import evaluate
from streamjoin.shedding.instance import Instant, ShedInputError, ShedInstance, build_instance
from streamjoin.shedding.optimum import Optimum, optimum
from streamjoin.shedding.policy import POLICIES, PolicyContext, SheddingPolicy, make_policy, register_policy
from streamjoin.shedding.runtime import WindowShedder
from streamjoin.shedding.simulate import Outcome, ShedResult, simulate

__all__ = [
    "COMBINE",
    "POLICIES",
    "BadImportance",
    "EntryFactory",
    "Instant",
    "Optimum",
    "Outcome",
    "PolicyContext",
    "ShedEntry",
    "ShedInputError",
    "ShedInstance",
    "ShedResult",
    "SheddingPolicy",
    "WindowShedder",
    "build_instance",
    "evaluate",
    "make_policy",
    "optimum",
    "register_policy",
    "simulate",
]

del _policies
