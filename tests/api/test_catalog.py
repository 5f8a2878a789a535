"""The metric catalog is derived from the published records, and docs/metrics.md lists exactly it."""

from __future__ import annotations

import re
from pathlib import Path

from streamjoin.api.metrics import CATALOG
from streamjoin.registry import OperatorStats, WindowStats
from streamjoin.registry.stats import stat_fields

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _documented() -> dict[str, tuple[str, str]]:
    """Return metric name (without `_total`) -> (type, labels) from the catalog table of docs/metrics.md."""
    out = {}
    for line in (DOCS / "metrics.md").read_text().splitlines():
        m = re.match(r"\| `(streamjoin_\w+)` \| ([^|]+) \| ([^|]+) \|", line)
        if m:
            name = m.group(1).removesuffix("_total")
            out[name] = (m.group(2).split()[0], m.group(3).strip())
    return out


def test_docs_list_every_metric_with_its_type_and_labels() -> None:
    documented = _documented()
    assert set(documented) == {spec.name for spec in CATALOG}
    for spec in CATALOG:
        kind, labels = documented[spec.name]
        assert kind == spec.kind, spec.name
        assert labels == (", ".join(spec.labels) or "—"), spec.name


def test_every_declared_metric_of_the_records_is_in_the_catalog() -> None:
    by_name = {spec.name: spec for spec in CATALOG}
    for record in (WindowStats, OperatorStats):
        for f in stat_fields(record):
            if f.stat.metric:
                spec = by_name[f.stat.metric]
                assert (spec.field, spec.kind, spec.help) == (f.name, f.stat.kind, f.stat.help)


def test_docs_of_the_registry_name_every_statistic() -> None:
    text = (DOCS / "registry.md").read_text()
    section = text[text.index("## Statistics") : text.index("Plan hash")]
    for record in (WindowStats, OperatorStats):
        for f in stat_fields(record):
            assert f"`{f.name}`" in section, f.name
