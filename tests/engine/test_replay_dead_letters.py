"""`streamjoin replay` with malformed records: each is reported with its reason, the rest computed.

A line that is not an event (`{"stream", "record"}` of a stream of the query) is a bad events file
(exit 2, see test_replay_cli.py); a record the query cannot use is skipped as the joiner dead-letters
it: one line on stderr with its reason, one JSON line in `--dead-letters`, and the results of the
good records are exactly the oracle's, with the ids the joiner would give (a dead letter keeps its
offset).
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import given

from streamjoin.engine.edges import index_fields
from streamjoin.testing import Event, expected_results

from .profiles import engine_settings
from .strategies import Case, cases
from .test_replay_cli import _command, _parse_output

_POISON = [  # (record text with `{stream}`'s timestamp field `ts` and join fields, reason)
    ('{{"ts": "yesterday", {keys}}}', "timestamp field 'ts' is not a finite number"),
    ('{{"ts": NaN, {keys}}}', "NaN is not JSON"),
    ('{{"ts": 1e999, {keys}}}', "too large for a double"),
    ('{{"ts": 5, {keys}, "x": Infinity}}', "Infinity is not JSON"),
    ('{{"ts": 1e300, {keys}}}', "out of range"),
    ("{{{keys}}}", "missing timestamp field 'ts'"),
    ("[1, 2]", "not a JSON object"),
]


def _bad_record(case: Case, stream: str, rng: random.Random) -> tuple[str, str]:
    """Return (record text, reason) of a malformed record of `stream`, or one missing a join field."""
    fields = sorted(set(_join_fields(case, stream)))
    keys = ", ".join(f'"{f}": 1' for f in fields) or '"pad": 1'
    choice = rng.randrange(len(_POISON) + (1 if fields else 0))
    if choice == len(_POISON):
        missing = fields[0]
        kept = ", ".join(f'"{f}": 1' for f in fields[1:])
        return "{" + ", ".join(x for x in ('"ts": 3', kept) if x) + "}", f"missing join field {missing!r}"
    text, reason = _POISON[choice]
    return text.format(keys=keys), reason


def _join_fields(case: Case, stream: str) -> list[str]:
    return list(index_fields(case.query).get(stream, ()))


def _run(tmp: Path, raw: dict[str, Any], text: str) -> subprocess.CompletedProcess[str]:
    (tmp / "q.json").write_text(json.dumps(raw), encoding="utf-8")
    (tmp / "e.jsonl").write_text(text, encoding="utf-8")
    command = [*_command(), "replay", "--dead-letters", str(tmp / "dead.jsonl"), "q.json", "e.jsonl"]
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=120, check=False)


@engine_settings(5)
@given(case=cases(n=(2, 3), max_partitions=1))
def test_malformed_records_are_reported_and_the_rest_computed(case: Case) -> None:
    rng = random.Random(len(case.events))
    field = {i.stream: i.timestamp for i in case.query.inputs}
    assert all(f == "ts" for f in field.values()), field
    text: list[str] = []
    good: list[Event] = []
    bad: dict[int, tuple[str, str]] = {}
    offsets: Counter[str] = Counter()
    streams = case.query.stream_names
    items: list[tuple[str, dict[str, Any] | None]] = [(e.stream, dict(e.record)) for e in case.events]
    for _ in range(max(2, len(items) // 5)):
        items.insert(rng.randrange(len(items) + 1), (rng.choice(streams), None))
    for number, (stream, record) in enumerate(items, 1):
        offset = offsets[stream]
        offsets[stream] += 1
        if record is None:
            body, reason = _bad_record(case, stream, rng)
            bad[number] = (stream, reason)
            text.append(f'{{"stream": "{stream}", "record": {body}}}')
            continue
        record = {**record, "n": number}
        good.append(Event(stream, 0, offset, record["ts"], record))
        text.append(json.dumps({"stream": stream, "record": record}))
    with tempfile.TemporaryDirectory() as tmp:  # a fixture's directory would be shared by examples
        done = _run(Path(tmp), case.raw, "\n".join(text) + "\n")
        letters = [json.loads(x) for x in (Path(tmp) / "dead.jsonl").read_text().splitlines()]
    assert done.returncode == 0, done.stderr
    keys, _ = _parse_output(done.stdout, case.query, good)
    assert keys == expected_results(case.query, good)
    reports = done.stderr.strip().splitlines()
    assert reports[-1] == f"streamjoin replay: {len(bad)} malformed record(s) skipped"
    assert len(reports) == len(bad) + 1
    for report, letter, (number, (stream, reason)) in zip(
        reports, letters, sorted(bad.items()), strict=False
    ):
        assert report.startswith(f"streamjoin replay: line {number}: malformed record of {stream!r}: ")
        assert reason in report, report
        assert letter["line"] == number and letter["stream"] == stream and reason in letter["reason"]
        assert letter["event"] == text[number - 1]
    assert len(letters) == len(bad)
