"""The join as the peers' SQL writes it: a left-deep chain with pairwise time bounds.

Standard library only: the Flink and Spark jobs import it inside their own virtual environment.
Range windows in pairwise form: a combination is a result iff for every pair (j, k) of inputs
`ts_j - T_k <= ts_k <= ts_j + T_j` (the older record is within its own window of the newer). Each
join of the chain bounds the new input against the first one on the event-time column `rt` (the
pair Flink plans as an interval join and Spark uses for its state), and against every other input
already joined on the plain `ts` column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Bound", "Step", "load", "plan"]


@dataclass(frozen=True)
class Bound:
    """`new.col BETWEEN old.col - below AND old.col + above` (milliseconds)."""

    new: str
    old: str
    below_ms: int
    above_ms: int
    event_time: bool


@dataclass(frozen=True)
class Step:
    """Join the input `stream` to those before it: equalities and time bounds."""

    stream: str
    fields: tuple[str, ...]
    equalities: tuple[tuple[str, str, str], ...]  # (old stream, old field, new field)
    bounds: tuple[Bound, ...]


def load(directory: Path) -> dict[str, Any]:
    """Return the workload definition written next to the data (`workload.json`)."""
    definition: dict[str, Any] = json.loads((directory / "workload.json").read_text())
    return definition


def plan(definition: dict[str, Any]) -> list[Step]:
    """Return the join steps; the first step is the first input alone."""
    windows = {s["name"]: int(s["window_ms"]) for s in definition["streams"]}
    fields = {s["name"]: tuple(s["fields"]) for s in definition["streams"]}
    order = [s["name"] for s in definition["streams"]]
    steps: list[Step] = []
    for i, new in enumerate(order):
        equalities = []
        for e in definition["equalities"]:
            if e["right"] == new and e["left"] in order[:i]:
                equalities.append((e["left"], e["left_field"], e["right_field"]))
            elif e["left"] == new and e["right"] in order[:i]:
                equalities.append((e["right"], e["right_field"], e["left_field"]))
        if i and not equalities:
            raise ValueError(f"input {new!r} does not join any input before it: reorder the streams")
        bounds = tuple(
            Bound(new, old, windows[new], windows[old], event_time=(j == 0))
            for j, old in enumerate(order[:i])
        )
        steps.append(Step(new, fields[new], tuple(equalities), bounds))
    return steps
