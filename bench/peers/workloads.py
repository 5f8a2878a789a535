"""The peer benchmark's workloads: definitions, deterministic generators, files on disk.

A workload is a join of range windows over streams of integer-millisecond timestamps. It is written
to a directory as the three systems read it:

- `query.json`: the streamjoin query; `events.jsonl`: the replay input, in arrival order;
- `<stream>/part-0.csv`: one directory per stream (`ts` first, then the stream's fields), for Flink
  and Spark (Spark's file source reads directories);
- `workload.json`: the definition (streams, windows, equalities), from which the peers build SQL.

Timestamps start at `BASE_MS`, not 0: Spark drops records at event time 0 as late.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.golab_workload import TABLE5
from bench.golab_workload import generate as golab_generate

__all__ = [
    "BASE_MS",
    "WORKLOADS",
    "common_arguments",
    "Equality",
    "Stream",
    "Workload",
    "events",
    "names",
    "query_json",
    "scaled",
    "write_workload",
]

BASE_MS = 1_000_000
Event = tuple[str, dict[str, int]]


@dataclass(frozen=True)
class Stream:
    """One input: its name, range window (ms) and non-time fields."""

    name: str
    window_ms: int
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Equality:
    """An equi-join predicate `left.left_field = right.right_field`."""

    left: str
    left_field: str
    right: str
    right_field: str


@dataclass(frozen=True)
class Workload:
    """A workload: streams, join graph, full-scale size and how its events are drawn."""

    name: str
    title: str
    streams: tuple[Stream, ...]
    equalities: tuple[Equality, ...]
    records: int
    seed: int
    draw: Callable[[int, random.Random], Iterator[Event]]

    def definition(self) -> dict[str, Any]:
        """Return the JSON form the peers' jobs read (`workload.json`)."""
        return {
            "name": self.name,
            "streams": [asdict(s) for s in self.streams],
            "equalities": [asdict(e) for e in self.equalities],
        }


def query_json(workload: Workload) -> dict[str, Any]:
    """Return the streamjoin query of `workload`."""
    return {
        "name": workload.name,
        "inputs": [
            {
                "stream": s.name,
                "topic": f"peers.{s.name}",
                "timestamp": "ts",
                "window": {"range": s.window_ms},
            }
            for s in workload.streams
        ],
        "where": [
            [f"{e.left}.{e.left_field}", "=", f"{e.right}.{e.right_field}"] for e in workload.equalities
        ],
        "output": {"topic": f"peers.{workload.name}.out"},
    }


def events(workload: Workload, records: int) -> Iterator[Event]:
    """Yield the first `records` events of `workload` (the same ones for the same seed)."""
    return workload.draw(records, random.Random(workload.seed))


def _uniform3(n: int, rng: random.Random) -> Iterator[Event]:
    # 10 records per ms over 3 streams, 1 s windows: 3,333 records per window and stream; with
    # 3,400 keys each arriving record finds about one partner per other window.
    for i in range(n):
        yield rng.choice("abc"), {"ts": BASE_MS + i // 10, "k": rng.randint(1, 3400)}


def _golab5(n: int, rng: random.Random) -> Iterator[Event]:
    # Golab & Özsu's generator with ts = idx in units of 1/sum(rates): the windows T * sum(rates)
    # (1,500 and 3,000) are then exactly Table 5's, in integer milliseconds.
    for idx, (stream, _ts, record) in enumerate(golab_generate(TABLE5, n, seed=rng.randint(0, 2**31))):
        yield stream, {"ts": BASE_MS + idx, "attr": int(record["attr"])}


_ZIPF_KEYS = 10_000
_ZIPF_S = 1.2


def _zipf3(n: int, rng: random.Random) -> Iterator[Event]:
    # 1 record per ms, 50 ms windows, keys Zipf(1.2) over 10,000 values: the hottest key is about
    # 18% of the records, so a few keys make most of the results.
    cum = list(itertools.accumulate(1 / (rank**_ZIPF_S) for rank in range(1, _ZIPF_KEYS + 1)))
    keys = rng.choices(range(1, _ZIPF_KEYS + 1), cum_weights=cum, k=n)
    for i, key in enumerate(keys):
        yield rng.choice("abc"), {"ts": BASE_MS + i, "k": key}


_CHAIN_FIELDS = {"a": ("x",), "b": ("x", "y"), "c": ("y", "z"), "d": ("z",)}


def _chain4(n: int, rng: random.Random) -> Iterator[Event]:
    # 10 records per ms over 4 streams, 1 s windows (2,500 records per window and stream); 2,500
    # values per attribute: about one partner per hop.
    for i in range(n):
        stream = rng.choice("abcd")
        record = {"ts": BASE_MS + i // 10}
        for field in _CHAIN_FIELDS[stream]:
            record[field] = rng.randint(1, 2500)
        yield stream, record


def _equi(names: str, field: str, window_ms: int) -> tuple[tuple[Stream, ...], tuple[Equality, ...]]:
    streams = tuple(Stream(n, window_ms, (field,)) for n in names)
    return streams, tuple(Equality(a, field, b, field) for a, b in itertools.pairwise(names))


def _build() -> dict[str, Workload]:
    equi_streams, equi_eq = _equi("abc", "k", 1000)
    zipf_streams, zipf_eq = _equi("abc", "k", 50)
    golab_streams = tuple(Stream(s.name, int(s.window * 15), ("attr",)) for s in TABLE5)
    golab_eq = tuple(Equality(a.name, "attr", b.name, "attr") for a, b in itertools.pairwise(TABLE5))
    chain_streams = tuple(Stream(n, 1000, f) for n, f in _CHAIN_FIELDS.items())
    chain_eq = (Equality("a", "x", "b", "x"), Equality("b", "y", "c", "y"), Equality("c", "z", "d", "z"))
    workloads = (
        Workload("equi3", "3-way equi-join, 1 s windows", equi_streams, equi_eq, 300_000, 1, _uniform3),
        Workload("golab5", "Golab Table 5 (4-way)", golab_streams, golab_eq, 200_000, 7, _golab5),
        Workload("zipf3", "3-way, Zipf 1.2 keys, 50 ms windows", zipf_streams, zipf_eq, 200_000, 3, _zipf3),
        Workload("chain4", "4-way on x, y, z, 1 s windows", chain_streams, chain_eq, 300_000, 4, _chain4),
    )
    return {w.name: w for w in workloads}


WORKLOADS = _build()


def write_workload(workload: Workload, records: int, directory: Path) -> Path:
    """Write `records` events of `workload` into `directory` (skipped if already complete)."""
    done = directory / "workload.json"
    if done.exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "query.json").write_text(json.dumps(query_json(workload), indent=2) + "\n")
    for s in workload.streams:
        (directory / s.name).mkdir(exist_ok=True)
    csv = {s.name: (directory / s.name / "part-0.csv").open("w") for s in workload.streams}
    columns = {s.name: ("ts", *s.fields) for s in workload.streams}
    try:
        with (directory / "events.jsonl").open("w") as out:
            for stream, record in events(workload, records):
                out.write(json.dumps({"stream": stream, "record": record}, separators=(",", ":")) + "\n")
                csv[stream].write(",".join(str(record[c]) for c in columns[stream]) + "\n")
    finally:
        for f in csv.values():
            f.close()
    done.write_text(json.dumps({**workload.definition(), "records": records}, indent=2) + "\n")
    return directory


def scaled(workload: Workload, scale: float) -> int:
    """Return the record count of `workload` at `scale` (1 = full)."""
    return max(int(workload.records * scale), 100)


def names(selected: Sequence[str]) -> list[Workload]:
    """Return the workloads named in `selected` ("all" = every one), with a clear error otherwise."""
    if not selected or "all" in selected:
        return list(WORKLOADS.values())
    unknown = [n for n in selected if n not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    return [WORKLOADS[n] for n in selected]


def common_arguments(parser: argparse.ArgumentParser, *, rounds: int) -> None:
    """Add the options both modes of the peer benchmark take: scale, rounds, workloads, folders."""
    root = Path(__file__).resolve().parent.parent.parent
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each workload's records")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument(
        "--workloads", nargs="*", default=["all"], help="equi3 golab5 zipf3 chain4 (default all)"
    )
    parser.add_argument("--data", type=Path, default=root / "bench" / ".peers-data")
    parser.add_argument("--peers-venv", type=Path, default=root / "bench" / ".peers-venv")
    parser.add_argument("--results", type=Path, default=root / "bench" / "results")
