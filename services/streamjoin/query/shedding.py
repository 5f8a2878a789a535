"""The `shedding` field of a query: load shedding under a memory budget, with importance.

What a user writes (a definition, immutable and validated); the policies that act on it live in
`streamjoin.shedding`. JSON form::

    "shedding": {"memory": 40, "policy": "simpprob", "importance": "imp", "combine": "min", "seed": 1}

- `memory` (required): the most records the query's windows may hold together, split evenly over
  its windows (each holds at most `memory // n`); at least one record per window.
- `policy` (required): one of the grammar's `POLICY_NAMES` (below).
- `importance`: the field of every input record holding its importance (a number > 0); absent or
  null, every record has importance 1 (the max-subset case of Das et al.).
- `combine`: how a result's importance comes from its members': one of the grammar's
  `COMBINE_NAMES` (below), `min` by default.
- `seed`: the seed of the `random` policy (0 by default).

>>> POLICY_NAMES
('random', 'frequency', 'simp', 'simpprob', 'dimpprob', 'dgl')
>>> COMBINE_NAMES
('min', 'max', 'sum', 'product', 'avg')
>>> d = parse_shedding({"memory": 40, "policy": "simpprob", "importance": "imp"}, inputs=2)
>>> d
SheddingDef(memory=40, policy='simpprob', importance='imp', combine='min', seed=0)
>>> d.share(2)
20
>>> dump_shedding(d)
{'memory': 40, 'policy': 'simpprob', 'importance': 'imp', 'combine': 'min', 'seed': 0}
>>> parse_shedding({"memory": 1, "policy": "simp"}, inputs=2)
Traceback (most recent call last):
...
streamjoin.query.errors.QueryError: shedding.memory: must be an integer >= 2 (one record per window)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from streamjoin.query.errors import QueryError
from streamjoin.query.grammar import (
    COMBINE_NAMES,
    POLICY_NAMES,
    SHEDDING_FIELDS,
    CombineName,
    PolicyName,
    one_of,
)
from streamjoin.query.names import parse_field

__all__ = ["SheddingDef", "dump_shedding", "parse_shedding"]


@dataclass(frozen=True, slots=True)
class SheddingDef:
    """A validated `shedding` field: budget in records, policy, importance field, combine, seed."""

    memory: int
    policy: PolicyName
    importance: str | None = None
    combine: CombineName = "min"
    seed: int = 0

    def share(self, windows: int) -> int:
        """Return the most records one of `windows` windows may hold (`memory // windows`)."""
        return self.memory // windows


def _integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_shedding(raw: object, *, inputs: int, where: str = "shedding") -> SheddingDef | None:
    """Validate the `shedding` JSON of a query with `inputs` inputs; None when it is absent.

    Raises:
        QueryError: an unknown field, a budget below one record per window, an unknown policy or
            combine function, an importance field that is not a name, a seed that is not an integer.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise QueryError(where, "must be a JSON object")
    spec = cast(Mapping[str, Any], raw)
    unknown = set(spec) - SHEDDING_FIELDS
    if unknown:
        raise QueryError(where, f"unknown field(s) {sorted(unknown)}; allowed: {sorted(SHEDDING_FIELDS)}")
    memory = spec.get("memory")
    if not _integer(memory) or memory < inputs:
        raise QueryError(f"{where}.memory", f"must be an integer >= {inputs} (one record per window)")
    policy = spec.get("policy")
    if policy not in POLICY_NAMES:
        raise QueryError(f"{where}.policy", f"must be {one_of(POLICY_NAMES)}, not {policy!r}")
    importance = spec.get("importance")
    if importance is not None:
        importance = parse_field(importance, f"{where}.importance")
    combine = spec.get("combine", "min")
    if combine not in COMBINE_NAMES:
        raise QueryError(f"{where}.combine", f"must be {one_of(COMBINE_NAMES)}, not {combine!r}")
    seed = spec.get("seed", 0)
    if not _integer(seed):
        raise QueryError(f"{where}.seed", "must be an integer")
    return SheddingDef(
        memory=memory,
        policy=cast(PolicyName, policy),
        importance=importance,
        combine=cast(CombineName, combine),
        seed=seed,
    )


def dump_shedding(shedding: SheddingDef) -> dict[str, Any]:
    """Return the JSON form of `shedding`, every field spelled out."""
    return {
        "memory": shedding.memory,
        "policy": shedding.policy,
        "importance": shedding.importance,
        "combine": shedding.combine,
        "seed": shedding.seed,
    }
