"""The examples of docs/queries.md are run: queries parse, replays print what the page shows.

Convention (docs/queries.md): a fenced block whose language is `json`, `jsonl` or `sql` carries one
role in its info string, `role=name[,name...]`:

- `query=N`: a query JSON; `events=N`: a replay input; `output=N`: the replay output of `N`
  (which must have a query and events);
- `cql=N`: CQL text; with a `query=N` it must give that query over streams registered as its
  inputs, else it is parsed over streams named as in its FROM (topic = name, timestamp `ts`) and
  must give the JSON of `parsed=N`;
- `sql=N`: SQL text that must give the query of `query=N` over streams registered as its inputs;
- `bad-query=N` / `bad-cql=N` / `bad-sql=N`: refused with exactly the message of the `text` block `error=N`.

Outputs are also checked against the brute-force oracle, and replayed under every evaluation,
expiration, algorithm and order: the page says none of them changes the result set.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from streamjoin.query import QueryDef, QueryError, parse_query
from streamjoin.query.cql import CqlStream, Stream, parse_cql
from streamjoin.query.dump import dump_query
from streamjoin.query.sql import parse_sql
from streamjoin.replay import replay
from streamjoin.testing import Event, ResultKey, expected_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "queries.md"
_FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_ROLES = frozenset(
    {"query", "events", "output", "cql", "sql", "parsed", "bad-query", "bad-cql", "bad-sql", "error"}
)
_CHECKED = frozenset({"json", "jsonl", "sql"})
# The fields a CQL or SQL text gives (streamjoin.query.text): the example's JSON must not supply them.
_TEXT_FIELDS = ("inputs", "where", "select", "within", "filter", "shedding", "columns")


@dataclass(frozen=True)
class Block:
    """One fenced block of the page."""

    lang: str
    role: str | None
    names: tuple[str, ...]
    body: str
    line: int


def _blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in _FENCE.finditer(text):
        lang, info, body = match.group(1), match.group(2).strip(), match.group(3)
        line = text.count("\n", 0, match.start()) + 1
        role, _, names = info.partition("=")
        found.append(Block(lang, role or None, tuple(n for n in names.split(",") if n), body, line))
    return found


BLOCKS = _blocks()


def _by_role(role: str) -> dict[str, Block]:
    out: dict[str, Block] = {}
    for block in BLOCKS:
        if block.role == role:
            for name in block.names:
                assert name not in out, f"line {block.line}: a second {role}={name}"
                out[name] = block
    return out


QUERIES, EVENTS, OUTPUTS = _by_role("query"), _by_role("events"), _by_role("output")
CQL, PARSED, ERRORS = _by_role("cql"), _by_role("parsed"), _by_role("error")
BAD_QUERIES, BAD_CQL = _by_role("bad-query"), _by_role("bad-cql")
SQL, BAD_SQL = _by_role("sql"), _by_role("bad-sql")


def _query(name: str) -> QueryDef:
    return parse_query(json.loads(QUERIES[name].body))


def _lines(block: Block) -> list[str]:
    return [line for line in block.body.splitlines() if line.strip()]


def _replay(query: QueryDef, lines: list[str]) -> list[dict[str, Any]]:
    out = StringIO()
    replay(query, lines, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _key(output: Mapping[str, Any]) -> ResultKey:
    """Return the oracle's key of an output record, from its id (`topic:partition:offset|...`)."""
    return tuple((int(p), int(o)) for p, o in (f.rsplit(":", 2)[1:] for f in str(output["id"]).split("|")))


def _events(query: QueryDef, lines: list[str]) -> list[Event]:
    """Return the oracle's events of a replay input (the Kafka timestamp of a line when given)."""
    fields = {i.stream: i.timestamp for i in query.inputs}
    offsets: Counter[str] = Counter()
    events = []
    for line in lines:
        event = json.loads(line)
        stream, record = event["stream"], event["record"]
        field = fields[stream]
        ts = event["timestamp"] if field is None else record[field]
        events.append(Event(stream, 0, offsets[stream], ts, record))
        offsets[stream] += 1
    return events


def _variants(query: QueryDef) -> Iterator[tuple[str, QueryDef]]:
    """Yield the query under every evaluation, expiration, algorithm and order."""
    modes = [{"mode": "eager"}, {"mode": "lazy", "every": 7}]
    orders: list[Any] = ["auto", list(reversed(query.stream_names))]
    base = dump_query(query)
    for evaluation, expiration, algorithm, order in itertools.product(modes, modes, ("hash", "nlj"), orders):
        changed = {"evaluation": evaluation, "expiration": expiration, "algorithm": algorithm, "order": order}
        yield json.dumps(changed), parse_query({**base, **changed})


class _AnyStream(Mapping[str, CqlStream]):
    """Registered streams for a CQL example without a query: every name, topic = name, `ts`."""

    def __getitem__(self, name: str) -> CqlStream:
        return Stream(name, "ts")

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_the_page_has_examples_of_every_kind() -> None:
    for role in (
        "query",
        "events",
        "output",
        "cql",
        "sql",
        "parsed",
        "bad-query",
        "bad-cql",
        "bad-sql",
        "error",
    ):
        assert _by_role(role), f"no {role}= example in {DOC.name}"


def test_every_json_and_sql_block_is_a_checked_example() -> None:
    for block in BLOCKS:
        if block.lang in _CHECKED:
            assert block.role in _ROLES and block.names, f"line {block.line}: ```{block.lang} without a role"
        if block.role is not None:
            assert block.role in _ROLES, f"line {block.line}: unknown role {block.role!r}"
    for name in OUTPUTS:
        assert name in QUERIES and name in EVENTS, f"output={name} needs query={name} and events={name}"
    for name in EVENTS:
        assert name in OUTPUTS, f"events={name} has no output={name}"
    for name in CQL:
        assert name in QUERIES or name in PARSED, f"cql={name} needs query={name} or parsed={name}"
    for name in SQL:
        assert name in QUERIES, f"sql={name} needs query={name}"
    assert set(ERRORS) == set(BAD_QUERIES) | set(BAD_CQL) | set(BAD_SQL)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_parses_and_survives_normalisation(name: str) -> None:
    query = _query(name)
    assert parse_query(dump_query(query)) == query


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_replay_prints_the_output_shown(name: str) -> None:
    query = _query(name)
    shown = [json.loads(line) for line in _lines(OUTPUTS[name])]
    assert _replay(query, _lines(EVENTS[name])) == shown


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_the_output_shown_is_the_oracles(name: str) -> None:
    query = _query(name)
    shown = [json.loads(line) for line in _lines(OUTPUTS[name])]
    assert Counter(map(_key, shown)) == expected_results(query, _events(query, _lines(EVENTS[name])))


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_no_mode_algorithm_or_order_changes_the_output(name: str) -> None:
    shown = Counter(_lines(OUTPUTS[name]))
    shown = Counter(json.dumps(json.loads(line), sort_keys=True) for line in shown.elements())
    for label, variant in _variants(_query(name)):
        got = Counter(json.dumps(r, sort_keys=True) for r in _replay(variant, _lines(EVENTS[name])))
        assert got == shown, label


@pytest.mark.parametrize("name", sorted(CQL))
def test_cql_gives_the_query_shown(name: str) -> None:
    text = CQL[name].body
    if name in QUERIES:
        raw = json.loads(QUERIES[name].body)
        streams = {i["stream"]: Stream(i["topic"], i["timestamp"]) for i in raw["inputs"]}
        fields = {k: v for k, v in raw.items() if k not in _TEXT_FIELDS}
        assert parse_query({**fields, **parse_cql(text, streams)}) == parse_query(raw)
    if name in PARSED:
        parsed = parse_cql(text, _AnyStream())
        assert parsed == json.loads(PARSED[name].body)
        parse_query({"name": name, "output": {"topic": "out"}, **parsed})


@pytest.mark.parametrize("name", sorted(SQL))
def test_sql_gives_the_query_shown(name: str) -> None:
    raw = json.loads(QUERIES[name].body)
    streams = {i["stream"]: Stream(i["topic"], i["timestamp"]) for i in raw["inputs"]}
    fields = {k: v for k, v in raw.items() if k not in _TEXT_FIELDS}  # what the text must give itself
    assert parse_query({**fields, **parse_sql(SQL[name].body, streams)}) == parse_query(raw)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_examples_give_the_message_shown(name: str) -> None:
    with pytest.raises(QueryError) as refused:
        if name in BAD_QUERIES:
            parse_query(json.loads(BAD_QUERIES[name].body))
        elif name in BAD_SQL:
            parse_sql(BAD_SQL[name].body, {s: Stream(s, "ts") for s in ("a", "b", "c")})
        else:
            parse_cql(BAD_CQL[name].body, {s: Stream(s, "ts") for s in ("a", "b", "c")})
    assert str(refused.value) == ERRORS[name].body.strip()


def _base(**changes: Any) -> dict[str, Any]:
    query: dict[str, Any] = {
        "name": "q",
        "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 100}} for s in "abc"],
        "where": [["a.src", "=", "b.src"], ["b.src", "=", "c.src"]],
        "output": {"topic": "out"},
    }
    query.update(changes)
    return query


def _two(*windows: Any) -> dict[str, Any]:
    return _base(
        inputs=[{"stream": s, "window": w} for s, w in zip("ab", windows, strict=True)],
        where=[["a.k", "=", "b.k"]],
    )


_TABLE: list[Any] = [
    _two({"range": 0}, {"rows": 5}),
    _two({"rows": 2.5}, {"rows": 5}),
    _two({"range": 1, "rows": 2}, {"rows": 5}),
    _two({"range": 1, "partition_by": "x"}, {"rows": 5}),
    _base(inputs=[{"stream": "a", "window": {"range": 1}}]),
    _base(inputs=[{"stream": "a", "window": {"range": 1}}, {"stream": "a", "window": {"range": 1}}]),
    _base(where=[["a.src", "=", "b.src"]]),
    _base(where=[["a.src", "=", "b.src"], ["b.src", "=", "d.src"]]),
    _base(where=[["a.src", "==", "b.src"], ["b.src", "=", "c.src"]]),
    _base(evaluation={"mode": "lazy"}),
    _base(expiration={"mode": "sometimes"}),
    _base(order=["a", "b"]),
    _base(algorithm="merge"),
    _base(lateness=-1),
    _base(start="now"),
    _base(select=["a.src", 3]),
    _base(foo=1),
]


@pytest.mark.parametrize("raw", _TABLE, ids=range(len(_TABLE)))
def test_the_error_table_quotes_the_parsers_messages(raw: Any) -> None:
    with pytest.raises(QueryError) as refused:
        parse_query(raw)
    assert f"`{refused.value}`" in DOC.read_text(encoding="utf-8")


def _streamjoin() -> list[str]:
    script = Path(sys.executable).with_name("streamjoin")
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]
    )


def test_the_replay_command_and_its_errors(tmp_path: Path) -> None:
    """The CLI prints the `flows` output; a bad query or events line exits 2 with the line shown."""
    doc = DOC.read_text(encoding="utf-8")
    (tmp_path / "flows.json").write_text(QUERIES["flows"].body, encoding="utf-8")
    (tmp_path / "flows.jsonl").write_text(EVENTS["flows"].body, encoding="utf-8")
    bad = _base(where=[["a.src", "=", "b.src"], ["b.src", "=", "d.src"]])
    (tmp_path / "q.json").write_text(json.dumps(bad), encoding="utf-8")
    lines = _lines(EVENTS["flows"])
    lines[4] = lines[4].replace('"ts": 140, ', "")
    (tmp_path / "missing.jsonl").write_text("\n".join(lines), encoding="utf-8")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*_streamjoin(), "replay", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)

    ok = run("flows.json", "flows.jsonl")
    assert ok.returncode == 0, ok.stderr
    assert [json.loads(x) for x in ok.stdout.splitlines()] == [
        json.loads(x) for x in _lines(OUTPUTS["flows"])
    ]
    refused = run("q.json", "flows.jsonl")
    assert refused.returncode == 2 and refused.stdout == ""
    message = refused.stderr.strip()
    assert "\n" not in message and f"`{message}`" in doc, message
    skipped = run("flows.json", "missing.jsonl")  # a malformed record: reported, the rest computed
    assert skipped.returncode == 0, skipped.stderr
    query = _query("flows")
    good = _events(query, _lines(EVENTS["flows"]))
    del good[4]  # the record without its timestamp keeps its offset, as a dead letter does
    got = Counter(_key(json.loads(x)) for x in skipped.stdout.splitlines())
    assert got == expected_results(query, good) and got, skipped.stdout
    report, summary = skipped.stderr.strip().splitlines()
    assert f"`{report}`" in doc and f"`{summary}`" in doc, skipped.stderr
