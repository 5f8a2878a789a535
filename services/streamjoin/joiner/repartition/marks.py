"""Repartitioner positions outside Redis, so a Redis restarted empty loses none (docs/registry.md).

A repartitioner's position (the next source offset to re-key, and the largest timestamp re-keyed)
lives in Redis (`RepartitionStore`). After each commit it is also written, at most once a second and
in the background, to the positions topic (`PositionLog.rekey_key`: the query, its incarnation's
position name and the source partition), and at once when the repartitioner starts at `start`. A
claim that finds no position in Redis but a mark resumes at the mark: never past a record not yet
re-keyed (a mark is written after its commit, which follows the acknowledgements), at worst before
some (they are re-keyed again, and the operators drop them as duplicates by source offset).

>>> RekeyMark.from_bytes(RekeyMark(42, "17.5").to_bytes())
RekeyMark(position=42, maxts='17.5')
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

from streamjoin.joiner.recovery.positions import PositionLog

__all__ = ["RekeyMark", "RekeyMarks"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RekeyMark:
    """A committed repartitioner position."""

    position: int
    maxts: str | None
    """The largest timestamp re-keyed so far, as JSON text (None: none yet)."""

    def to_bytes(self) -> bytes:
        """Return the JSON form."""
        return json.dumps({"position": self.position, "maxts": self.maxts}).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> RekeyMark:
        """Return the mark of `to_bytes`; raise ValueError if `raw` is not one."""
        try:
            body = json.loads(raw)
            maxts = body.get("maxts")
            return cls(int(body["position"]), str(maxts) if maxts is not None else None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a repartitioner mark: {exc}") from None


class RekeyMarks:
    """The marks of one repartitioner (see the module docstring)."""

    def __init__(self, log: PositionLog, key: str, *, interval_ms: int = 1_000) -> None:
        self._log = log
        self._key = key
        self._interval = interval_ms / 1000
        self._last = -float("inf")
        self._pending: asyncio.Task[None] | None = None

    async def read(self) -> RekeyMark | None:
        """Return the latest mark, None if there is none (or it cannot be read as one)."""
        raw = await self._log.read(self._key)
        if raw is None:
            return None
        try:
            return RekeyMark.from_bytes(raw)
        except ValueError as exc:
            _log.warning("ignoring the mark %s: %s", self._key, exc)
            return None

    async def write(self, mark: RekeyMark) -> None:
        """Write `mark` now and wait for it (after an earlier one still being written)."""
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)
        self._last = time.monotonic()
        await self._log.put(self._key, mark.to_bytes())

    def committed(self, mark: RekeyMark) -> None:
        """Write `mark` in the background if one is due and none is being written."""
        if time.monotonic() - self._last < self._interval:
            return
        if self._pending is not None and not self._pending.done():
            return
        self._last = time.monotonic()
        self._pending = asyncio.ensure_future(self._write(mark))

    async def _write(self, mark: RekeyMark) -> None:
        try:
            await self._log.put(self._key, mark.to_bytes())
        except Exception as exc:  # a mark is a safety net for a lost Redis, never a reason to stop
            _log.warning("%s: mark not written: %s", self._key, exc)
