"""Render the console: its page, its static files and a query's plan as SVG (Jinja2, autoescaped).

Every value that comes from a user (stream and query names, reasons) passes through Jinja2's
autoescape; the page itself carries no data and no secret: its script reads the API with the token
the user types, kept in the browser's sessionStorage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from streamjoin.api.schemas import PlanPublic

__all__ = ["CSP", "PlanPicture", "plan_svg", "render_page", "static_file"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
"""The console's Content-Security-Policy: its own script and style only, no inline code."""

_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

_NODE_W, _NODE_H, _GAP_X, _ROW_H, _LEFT = 96, 30, 36, 54, 150


@cache
def _environment() -> jinja2.Environment:
    loader = jinja2.PackageLoader("streamjoin.api.ui", "templates")
    return jinja2.Environment(
        loader=loader, autoescape=jinja2.select_autoescape(["html", "svg"]), undefined=jinja2.StrictUndefined
    )


def render_page(version: str) -> str:
    """Return the console's HTML page (a shell; its script fills it from the API)."""
    return _environment().get_template("index.html").render(version=version)


def static_file(name: str) -> tuple[bytes, str] | None:
    """Return a static file's bytes and media type, or None if the console has no such file."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or "\\" in name or name.startswith(".") or suffix not in _STATIC_TYPES:
        return None
    path = resources.files("streamjoin.api.ui").joinpath("static", name)
    if not path.is_file():
        return None
    return path.read_bytes(), _STATIC_TYPES[suffix]


@dataclass(frozen=True, slots=True)
class PlanPicture:
    """The geometry of a plan picture: stream nodes on top, one probe row per origin, a cost bar pair."""

    streams: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    costs: list[dict[str, Any]]
    width: int
    height: int


def _layout(plan: PlanPublic, streams: list[str]) -> PlanPicture:
    step = _NODE_W + _GAP_X
    nodes = [{"name": s, "x": _LEFT + i * step, "y": 34} for i, s in enumerate(streams)]
    rows: list[dict[str, Any]] = []
    for r, (origin, order) in enumerate(sorted((plan.local_orders or {}).items())):
        y = 34 + (r + 1) * _ROW_H + 20
        chain = [origin, *[s for s in order if s != origin]]
        steps = [{"name": s, "x": _LEFT + i * step, "y": y, "first": i == 0} for i, s in enumerate(chain)]
        rows.append({"origin": origin, "y": y, "steps": steps})
    costs_y = 34 + (len(rows) + 1) * _ROW_H + 30
    known = [c for c in (plan.estimated_cost, plan.observed_cost) if c is not None]
    scale = max(known, default=0.0) or 1.0
    bar_max = max(len(streams), 3) * step - _GAP_X
    costs = [
        {
            "label": label,
            "value": value,
            "y": costs_y + i * 26,
            "w": 0 if value is None else max(2, round(bar_max * value / scale)),
        }
        for i, (label, value) in enumerate(
            (("estimated", plan.estimated_cost), ("observed", plan.observed_cost))
        )
    ]
    width = _LEFT + max(len(streams), 3) * step + 40
    return PlanPicture(nodes, rows, costs, width, costs_y + 2 * 26 + 10)


def plan_svg(plan: PlanPublic, streams: list[str]) -> str:
    """Return `plan` as SVG: the query's streams, each origin's probe order, estimated vs observed cost."""
    picture = _layout(plan, streams)
    return _environment().get_template("plan.svg").render(plan=plan, p=picture, w=_NODE_W, h=_NODE_H)
