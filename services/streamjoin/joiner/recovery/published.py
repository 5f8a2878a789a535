"""What an operator published after its progress marker, so a rebuilt state does not publish it twice.

A result is known by its stable `id` (its members' `topic:partition:offset`); a dead letter by its
source record (topic, offset, stream) or, for a result too large to publish, by the result's id.

>>> from streamjoin.joiner.publish.outbox import OutboxRecord
>>> seen = PublishedIds(results={"t:0:1|u:0:2"})
>>> result_id(OutboxRecord(None, b'{"query":"q","ts":1,"tuples":{},"id":"t:0:1|u:0:2"}'))
't:0:1|u:0:2'
>>> dead_letter_id(OutboxRecord(None, b"x", (("source-topic", b"t"), ("source-offset", b"7"))))
('source', 't', '7', '')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import orjson

from streamjoin.joiner.batch.builder import BuiltBatch
from streamjoin.joiner.publish.outbox import OutboxRecord

__all__ = ["PublishedIds", "dead_letter_id", "result_id"]

_K = TypeVar("_K")


@dataclass(slots=True)
class PublishedIds:
    """What one (query, partition) published after its marker: result ids and dead-letter sources."""

    results: set[str] = field(default_factory=set)
    dead: set[tuple[str, ...]] = field(default_factory=set)
    taken_results: set[str] = field(default_factory=set)
    """Ids dropped from a batch whose commit is not known to have succeeded yet (`confirm`, `undo`)."""
    taken_dead: set[tuple[str, ...]] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.results) + len(self.dead) + len(self.taken_results) + len(self.taken_dead)

    def filter(self, built: BuiltBatch) -> BuiltBatch:
        """Return `built` without the records already published (each id is dropped once; `undo`
        brings back the ids of batches whose commit failed)."""
        results = _keep(built.results, result_id, self.results, self.taken_results)
        dead = _keep(built.dead, dead_letter_id, self.dead, self.taken_dead)
        if len(results) == len(built.results) and len(dead) == len(built.dead):
            return built
        commit = replace(built.commit, outbox={"results": results, "dead": dead})
        return replace(built, commit=commit, results=results, dead=dead)

    def confirm(self) -> None:
        """The batches filtered so far are committed: their ids are gone for good."""
        self.taken_results.clear()
        self.taken_dead.clear()

    def undo(self) -> None:
        """A new attempt resumes from the last commit: the ids of later batches count again."""
        self.results |= self.taken_results
        self.dead |= self.taken_dead
        self.confirm()


def _keep(
    records: Sequence[OutboxRecord],
    key_of: Callable[[OutboxRecord], _K | None],
    seen: set[_K],
    taken: set[_K],
) -> list[OutboxRecord]:
    kept: list[OutboxRecord] = []
    for record in records:
        key = key_of(record) if seen else None
        if key is not None and key in seen:
            seen.discard(key)
            taken.add(key)
            continue
        kept.append(record)
    return kept


def result_id(record: OutboxRecord) -> str | None:
    """Return a result record's `id` (None if the value is not a result)."""
    try:
        value = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, str) else None


def dead_letter_id(record: OutboxRecord) -> tuple[str, ...] | None:
    """Return what identifies a dead letter: its source record, or the result it stands for."""
    headers = {name: value.decode(errors="replace") for name, value in record.headers}
    if "result-id" in headers:
        return ("result", headers["result-id"])
    if "source-offset" in headers:
        return (
            "source",
            headers.get("source-topic", ""),
            headers["source-offset"],
            headers.get("stream", ""),
        )
    return None
