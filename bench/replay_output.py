"""The output path on Golab & Özsu's Table 5 workload: the engine counting results against
`streamjoin replay` writing them (to a file, and with `--count`).

Writes the query and the events (`{"stream", "record"}` lines) to a temporary directory, then runs,
each in its own process and in CPU seconds (user + system, `RUSAGE_CHILDREN`; the machine is shared):

- `engine`: the operator over the records already decoded, results counted (`time.process_time`
  around the joins only);
- `replay`: `streamjoin replay QUERY EVENTS > FILE` (the whole command: start-up, reading, joining,
  writing);
- `replay --count`: the same, printing the number of results only.

Each replay line carries `vs_engine`, its CPU seconds over the engine's of the same round (the
target for a replay to a file: at most 2).

With `--old PYTHONPATH`, the two replays also run with that code, alternating with this one, so the
two are compared under the same load.

    python bench/replay_output.py --records 200000 --repeat 2
    python bench/replay_output.py --records 50000 --old /path/services:/path
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golab_workload import TABLE5, generate

_ENGINE = """
import json, sys, time
from streamjoin.operator import OperatorFactory
from streamjoin.query_file import load_query
from pathlib import Path
query = load_query(Path(sys.argv[1]))
events = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
operator = OperatorFactory(query).build()
add, advance = operator.add, operator.advance
offsets = dict.fromkeys(query.stream_names, 0)
start = time.process_time()
count = 0
for n, event in enumerate(events, start=1):
    stream, record = event["stream"], event["record"]
    offset = offsets[stream]
    offsets[stream] = offset + 1
    add(stream, record, ts=record["ts"], offset=offset)
    if n % 512 == 0:
        count += len(advance())
count += len(advance()) + len(operator.finish())
print(time.process_time() - start, count)
"""


def write_workload(directory: Path, records: int) -> tuple[Path, Path]:
    """Write Table 5's query (range windows, equi-join on `attr`) and `records` events."""
    query = {
        "name": "golab",
        "inputs": [
            {"stream": s.name, "topic": s.name, "timestamp": "ts", "window": {"range": s.window}}
            for s in TABLE5
        ],
        "where": [[f"{a.name}.attr", "=", f"{b.name}.attr"] for a, b in itertools.pairwise(TABLE5)],
        "output": {"topic": "golab.out"},
        "algorithm": "hash",
    }
    query_path, events_path = directory / "golab.json", directory / "events.jsonl"
    query_path.write_text(json.dumps(query), encoding="utf-8")
    with events_path.open("w", encoding="utf-8") as out:
        for stream, _ts, record in generate(TABLE5, records, seed=7):
            out.write(json.dumps({"stream": stream, "record": record}) + "\n")
    return query_path, events_path


def cpu_of(command: list[str], env: dict[str, str], stdout: Path) -> tuple[float, float]:
    """Run `command` with stdout to the file `stdout`; return (CPU s, wall s) of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with stdout.open("wb") as out:
        subprocess.run(command, env=env, stdout=out, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    """Generate the workload, run the measures alternately, print one JSON line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--old", help="PYTHONPATH of the code to compare with (replays only)")
    args = parser.parse_args()
    new_env = dict(os.environ)
    versions = {"new": new_env}
    if args.old:
        versions["old"] = {**os.environ, "PYTHONPATH": args.old}
    cli = [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "replay"]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        query, events = write_workload(directory, args.records)
        out = directory / "out.jsonl"
        for _ in range(args.repeat):
            engine = subprocess.run(
                [sys.executable, "-c", _ENGINE, str(query), str(events)],
                env=new_env,
                capture_output=True,
                text=True,
                check=True,
            )
            seconds, results = engine.stdout.split()
            engine_cpu = float(seconds)
            print(
                json.dumps(
                    {"measure": "engine counted", "cpu_s": round(engine_cpu, 2), "results": int(results)}
                )
            )
            for name, env in versions.items():
                cpu, wall = cpu_of([*cli, str(query), str(events)], env, out)
                lines = sum(1 for _ in out.open("rb"))
                print(
                    json.dumps(
                        {
                            "measure": f"replay to file ({name})",
                            "cpu_s": round(cpu, 2),
                            "wall_s": round(wall, 2),
                            "results": lines,
                            "vs_engine": round(cpu / engine_cpu, 2),
                        }
                    )
                )
                if name == "new":
                    cpu, wall = cpu_of([*cli, "--count", str(query), str(events)], env, out)
                    count = out.read_text().strip()
                    print(
                        json.dumps(
                            {
                                "measure": "replay --count",
                                "cpu_s": round(cpu, 2),
                                "vs_engine": round(cpu / engine_cpu, 2),
                                "wall_s": round(wall, 2),
                                "results": count,
                            }
                        )
                    )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
