"""Count a workload's results with streamjoin's engine alone: replay's loop without the output.

    python -m bench.peers.engine_count DIRECTORY

The reference for what writing the results costs `streamjoin replay` on the same input. Prints
{"results": N}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from streamjoin.operator import OperatorFactory
from streamjoin.query_file import load_query
from streamjoin.replay import read_events

__all__ = ["count", "main"]

_ADVANCE_EVERY = 512  # as streamjoin.replay


def count(query_file: Path, events_file: Path) -> int:
    """Return the number of results of the query over the events."""
    query = load_query(query_file)
    operator = OperatorFactory(query).build()
    offsets = dict.fromkeys(query.stream_names, 0)
    results = 0
    with events_file.open(encoding="utf-8") as lines:
        for number, stream, ts, record, size in read_events(query, lines):
            offset = offsets[stream]
            offsets[stream] = offset + 1
            operator.add(stream, record, ts=ts, offset=offset, size=size)
            if number % _ADVANCE_EVERY == 0:
                results += len(operator.advance())
    return results + len(operator.advance()) + len(operator.finish())


def main() -> None:
    """Print the count of DIRECTORY's workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    print(json.dumps({"results": count(args.directory / "query.json", args.directory / "events.jsonl")}))


if __name__ == "__main__":
    main()
