"""Read the Grafana dashboards of `deploy/grafana/dashboards` and the metrics the product exports.

A panel query is a PromQL expression with Grafana variables (`$query`, `$__rate_interval`, ...);
`substitute` turns it into plain PromQL for Prometheus. `metric_names` finds the metric names a
query uses, so a dashboard naming a metric the product does not export fails a test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DASHBOARD_DIR",
    "REPO_ROOT",
    "PanelQuery",
    "exported_metric_names",
    "load_dashboards",
    "metric_names",
    "panel_queries",
    "substitute",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_DIR = REPO_ROOT / "deploy" / "grafana" / "dashboards"

# PromQL words that look like identifiers but are not metric names.
_PROMQL_WORDS = frozenset(
    " ".join(
        (
            "sum min max avg group stddev stdvar count count_values bottomk topk quantile by without on",
            "ignoring group_left group_right offset bool and or unless rate irate increase delta idelta",
            "deriv histogram_quantile label_replace label_join abs absent absent_over_time ceil floor",
            "round clamp clamp_min clamp_max changes resets time timestamp vector scalar sort sort_desc",
            "predict_linear avg_over_time min_over_time max_over_time sum_over_time count_over_time",
            "last_over_time quantile_over_time stddev_over_time present_over_time exp ln log2 log10",
            "sqrt le inf nan",
        )
    ).split(" ")
)
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


@dataclass(frozen=True)
class PanelQuery:
    """One target of one panel: where it is and its PromQL."""

    dashboard: str
    panel: str
    ref_id: str
    expr: str
    instant: bool

    @property
    def id(self) -> str:
        """Return a test id: `dashboard/panel/refId`."""
        return f"{self.dashboard}/{self.panel}/{self.ref_id}"


def load_dashboards(directory: Path = DASHBOARD_DIR) -> dict[str, dict[str, Any]]:
    """Return every dashboard JSON of `directory` by file stem."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # a collapsed row keeps its panels inside


def panel_queries(dashboards: Mapping[str, Mapping[str, Any]]) -> list[PanelQuery]:
    """Return every target of every panel of `dashboards` (rows, which have none, are skipped)."""
    out: list[PanelQuery] = []
    for name, dashboard in dashboards.items():
        for panel in _panels(list(dashboard.get("panels", []))):
            for target in panel.get("targets", []):
                out.append(
                    PanelQuery(
                        dashboard=name,
                        panel=str(panel.get("title", panel.get("id"))),
                        ref_id=str(target.get("refId", "")),
                        expr=str(target.get("expr", "")),
                        instant=bool(target.get("instant")) and not target.get("range", False),
                    )
                )
    return out


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """Replace Grafana variables (`$name`, `${name}`, `[[name]]`) by `values[name]`.

    >>> substitute('rate(x{query=~"$query"}[$__rate_interval])', {"query": "q1", "__rate_interval": "1m"})
    'rate(x{query=~"q1"}[1m])'
    """

    def repl(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in values:
            raise KeyError(f"no value for the Grafana variable {name!r} in {expr!r}")
        return values[name]

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]", repl, expr)


def metric_names(expr: str) -> set[str]:
    """Return the metric names a PromQL expression uses (roughly: identifiers outside labels and strings).

    >>> sorted(metric_names('sum by (query) (rate(streamjoin_results_total{query=~"a"}[1m])) / up'))
    ['streamjoin_results_total', 'up']
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "{}", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # range and subquery durations
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1()", text)
    names = set()
    for match in _IDENT.finditer(text):
        word = match.group(0)
        after = text[match.end() :].lstrip()
        if word in _PROMQL_WORDS or after.startswith("("):  # a function call
            continue
        if re.fullmatch(r"\d+(ms|s|m|h|d|w|y)?", word) or word.startswith("__"):
            continue
        names.add(word)
    return names


def _sample_names(name: str, kind: str) -> set[str]:
    if kind == "counter":
        return {f"{name}_total"}
    if kind == "histogram":
        return {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    if kind == "summary":
        return {name, f"{name}_sum", f"{name}_count"}
    return {name}


def exported_metric_names() -> dict[str, str]:
    """Return every sample name the product exports, to where it comes from.

    The control plane's catalog (`streamjoin.api.metrics.CATALOG`, every joiner's statistics) and the
    archiver's own registry; counters end in `_total`, histograms in `_bucket`/`_sum`/`_count`.
    """
    from streamjoin.api.metrics import CATALOG
    from streamjoin.archiver.metrics import ArchiverMetrics

    names: dict[str, str] = {}
    for spec in CATALOG:
        for sample in _sample_names(spec.name, spec.kind):
            names[sample] = "control plane /metrics"
    for family in ArchiverMetrics().registry.collect():
        for sample in _sample_names(family.name, family.type):
            names[sample] = "archiver /metrics"
    return names
