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


def topic_keys(steps: list[Step]) -> dict[str, str]:
    """Return the field each input's topic is keyed (and partitioned) by: the first input's side of
    the second input's first equality, and every other input's side of its own first equality.
    Kafka Streams then re-partitions only where a join changes the key (chain4's y and z)."""
    keys = {steps[0].stream: steps[1].equalities[0][1]}
    for step in steps[1:]:
        keys[step.stream] = step.equalities[0][2]
    return keys


@dataclass(frozen=True)
class ChainStep:
    """How Kafka Streams joins `stream` to the result so far (whose timestamp is its youngest
    member's): `new.ts` in `[result ts - before_ms, result ts + after_ms]`; `rekey` when the result
    must first be re-keyed by the old side of the step's first equality."""

    stream: str
    before_ms: int
    after_ms: int
    rekey: bool


def chain(definition: dict[str, Any], steps: list[Step]) -> list[ChainStep]:
    """Return the Kafka Streams join of every input after the first.

    `before_ms` is the new input's window (no member may be older than its own window of the new
    record); `after_ms` the largest window before it, the least that loses no result of the pairwise
    windows (the bound that holds is the member's own window of the new record, which no single
    join window around the result's timestamp expresses).
    """
    windows = {s["name"]: int(s["window_ms"]) for s in definition["streams"]}
    key_class = {(steps[0].stream, steps[1].equalities[0][1])}
    out = []
    for i, step in enumerate(steps[1:], start=1):
        old, old_field, new_field = step.equalities[0]
        rekey = (old, old_field) not in key_class
        if rekey:
            key_class = {(old, old_field)}
        key_class.add((step.stream, new_field))
        after = max(windows[s.stream] for s in steps[:i])
        out.append(ChainStep(step.stream, windows[step.stream], after, rekey))
    return out
