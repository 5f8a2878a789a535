"""`specs_from_snapshot`: what a worker runs of a registry snapshot (pure, no Redis)."""

from __future__ import annotations

from streamjoin.joiner.registry_follow.watch import QuerySpec, specs_from_snapshot
from streamjoin.query import ModeDef, parse_query
from streamjoin.registry import QueryControls, QueryRecord, RegistrySnapshot


def _record(name: str) -> QueryRecord:
    query = parse_query(
        {
            "name": name,
            "inputs": [{"stream": "a", "window": {"range": 5}}, {"stream": "b", "window": {"rows": 2}}],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": f"{name}.out"},
        }
    )
    return QueryRecord.of(query, at=1.0)


def test_controls_are_applied_and_bad_queries_are_reported_not_fatal() -> None:
    good = _record("good")
    good = QueryRecord(
        good.query,
        None,
        good.controls.with_changes({"evaluation": {"mode": "lazy", "every": 4}, "paused": True}),
        1.0,
        1.0,
        revision=2,
    )
    misfit = _record("misfit")
    misfit = QueryRecord(misfit.query, None, QueryControls(order=("a", "zz")), 1.0, 1.0)
    snapshot = RegistrySnapshot(
        7, {}, {"good": good, "misfit": misfit}, problems={"corrupt": "definition: not an object"}
    )
    specs, problems = specs_from_snapshot(snapshot)
    assert list(specs) == ["good"] and set(problems) == {"misfit", "corrupt"}
    spec = specs["good"]
    assert spec == QuerySpec.of(good)
    assert spec.query.evaluation == ModeDef("lazy", 4) and spec.paused and spec.revision == 2
    assert spec.topics == ("a", "b")
    changed = QuerySpec.of(
        QueryRecord(good.query, None, good.controls.with_changes({"order": ["b", "a"]}), 1, 1)
    )
    assert changed.fingerprint != spec.fingerprint  # a control change rebuilds the operators
    assert QuerySpec.of(good).fingerprint == spec.fingerprint
