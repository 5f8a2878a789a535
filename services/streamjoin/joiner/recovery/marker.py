"""The progress marker of one (query, partition): what `PositionKeeper` writes and a rebuild reads.

See `streamjoin.joiner.recovery.positions` (the markers' topic, when they are written and what a joiner
decides from one).

>>> m = Marker("100.0:1", 7, {"t": 42}, {"results": 9, "dead": 0}, None, {}, {}, [(0, 5, "1|2|1|3", -1)])
>>> Marker.from_bytes(m.to_bytes()) == m
True
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from streamjoin.joiner.recovery.published import PublishedIds

__all__ = ["Marker"]


@dataclass(frozen=True, slots=True)
class Marker:
    """What one (query, partition) had committed and published as of batch `batch`."""

    incarnation: str
    """`<created_at>:<revision>` of the query's registry record: a marker of another one is ignored."""
    batch: int
    offsets: dict[str, int]
    """The next offset of each input topic after the batch."""
    outputs: dict[str, int]
    """Per outbox, the output offset after the last acknowledged record (records from there on may
    be of later batches)."""
    watermark: float | None
    scalars: dict[str, Any]
    """The engine's checkpoint scalars (`MultiJoin.restore`)."""
    counters: dict[str, int]
    entries: list[tuple[int, int, str, int]] = field(default_factory=list)
    """Each held entry: (input, offset, its Redis header `ts|size|passes|seq`, its partition: -1 for
    the operator's, else the source partition of a re-keyed input's record)."""
    at: float = 0.0
    """Unix time the marker was made: everything published after it was produced later."""
    skip_results: list[str] = field(default_factory=list)
    """After a rebuild, until produced again: ids of results the lost state published after its
    marker (`PublishedIds`), so an operator restarted from the rebuilt checkpoint still drops them."""
    skip_dead: list[tuple[str, ...]] = field(default_factory=list)
    """The same for dead letters (`dead_letter_id`)."""
    sources: dict[str, int] = field(default_factory=dict)
    """Re-keyed inputs: the highest source offset taken per `input:source partition` (the duplicate
    filter, `CommitBatch.sources`)."""

    def skipped(self) -> PublishedIds:
        """Return what a state rebuilt from this marker (or resumed after one) must not publish again."""
        return PublishedIds(results=set(self.skip_results), dead=set(self.skip_dead))

    def to_bytes(self) -> bytes:
        """Return the zlib-compressed JSON form (entry offsets are near-sequential: they compress well).

        Made on the event loop about once a second per operator, over every held entry: the entries
        (ints and ASCII headers) go through orjson and zlib runs at level 1, several times cheaper
        than `json` and level 6 for 10% more bytes. The rest keeps `json`'s spelling of
        non-finite floats (a watermark of -Infinity), which orjson would write as null.
        """
        body = {
            "incarnation": self.incarnation,
            "batch": self.batch,
            "offsets": self.offsets,
            "outputs": self.outputs,
            "watermark": self.watermark,
            "scalars": self.scalars,
            "counters": self.counters,
            "at": self.at,
            "skip": {"results": self.skip_results, "dead": [list(d) for d in self.skip_dead]},
            "sources": self.sources,
        }
        head = json.dumps(body, separators=(",", ":")).encode()
        entries = orjson.dumps([e if e[3] >= 0 else e[:3] for e in self.entries])
        return zlib.compress(b'%s,"entries":%s}' % (head[:-1], entries), 1)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Marker:
        """Return the marker of `to_bytes`; raise ValueError if `raw` is not one."""
        try:
            body = json.loads(zlib.decompress(raw))
            skip = body.get("skip") or {}
            return cls(
                incarnation=str(body["incarnation"]),
                batch=int(body["batch"]),
                offsets={str(k): int(v) for k, v in body["offsets"].items()},
                outputs={str(k): int(v) for k, v in body["outputs"].items()},
                watermark=body["watermark"],
                scalars=dict(body["scalars"]),
                counters={str(k): int(v) for k, v in body["counters"].items()},
                entries=[
                    (int(e[0]), int(e[1]), str(e[2]), int(e[3]) if len(e) > 3 else -1)
                    for e in body["entries"]
                ],
                at=float(body.get("at", 0.0)),
                skip_results=[str(r) for r in skip.get("results", ())],
                skip_dead=[tuple(str(x) for x in d) for d in skip.get("dead", ())],
                sources={str(k): int(v) for k, v in body.get("sources", {}).items()},
            )
        except (zlib.error, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"not a position marker: {exc}") from None
