"""Records anyone who can write to the registry's log topic could write there, and what a restore
says of them (tests/api/test_registry_trust.py, tests/faults/test_storm.py)."""

from __future__ import annotations

import re
import time
from typing import Any

from streamjoin.kafka import LogRecord
from streamjoin.query import parse_query
from streamjoin.registry import LogEntry, LogSigner, QueryRecord
from streamjoin.registry.signing import MAC_HEADER

from .server import REGISTRY_KEY, ApiServer

__all__ = ["forgeries", "refused"]


def _record(name: str, topics: dict[str, str], *, within: float | None = None) -> QueryRecord:
    """A query over a and b; with `within`, a's records are bounded by that pair only (no window)."""
    a: dict[str, Any] = {"stream": "a", "topic": topics["a"], "timestamp": "ts", "window": {"range": 1000}}
    if within is not None:
        del a["window"]
    definition: dict[str, Any] = {
        "name": name,
        "inputs": [a, {"stream": "b", "topic": topics["b"], "timestamp": "ts", "window": {"range": 1000}}],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": topics["out"]},
    }
    if within is not None:
        definition["within"] = [["a", "b", within]]
    return QueryRecord.of(parse_query(definition), at=time.time())


def forgeries(prefix: str, topics: dict[str, str], *, real: str) -> list[LogRecord]:
    """What anyone who can produce to the topic could write, as raw records: a forged query (unsigned,
    and with another key's MAC), an unsigned delete of the real query `real`, a non-JSON record
    (unsigned, and signed), and a query signed with the deployment's key whose `within` bound of 1e30
    the API refuses. A restore refuses them as `unsigned` 3, `bad_signature` 1, `malformed` 1 and
    `invalid` 1 (`refused`)."""

    def raw(entry: LogEntry, **headers: str) -> LogRecord:
        value = entry.value.encode() if entry.value is not None else None
        return LogRecord(entry.key, value, {"sj-version": str(entry.version), **headers})

    def query(record: QueryRecord, version: int = 10**6) -> LogEntry:
        return LogEntry.query(prefix, record.name, record.to_json(), record.controls.to_hash()).at(version)

    signer = LogSigner(REGISTRY_KEY.encode())
    huge = signer.sign(query(_record("huge", topics, within=1e30), 2))  # the key holder's, but refused
    garbage_signed = signer.sign(LogEntry(f"{prefix}query:garbage2", "{not json", 2))
    return [
        raw(query(_record("forged", topics))),  # unsigned
        raw(query(_record("forged_mac", topics)), **{MAC_HEADER: "ab" * 32}),  # another key's MAC
        raw(LogEntry.tombstone(prefix, "query", real).at(10**6)),  # an unsigned delete of the real query
        LogRecord(f"{prefix}query:garbage", b"\xff\xfe not json", {"sj-version": "x"}),
        raw(garbage_signed, **{MAC_HEADER: garbage_signed.mac or ""}),  # authentic, but no entity
        raw(huge, **{MAC_HEADER: huge.mac or ""}),
    ]


def refused(api: ApiServer) -> dict[str, float]:
    """The registry log's records refused at restore so far, by reason (the API's metric)."""
    text = api.anon.get("/metrics").text
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r'^streamjoin_registry_log_refused_total\{reason="(\w+)"\} (\S+)$', text, re.M)
    }
