"""Which archive files a back-fill reads (no Spark), and the refusal of one that would read none.

Per input (`InputFeed`): every file of its topic, except that an input timed by the Kafka timestamp
reads only the hour directories that can hold records of its range (the archive is laid out by the
Kafka timestamp's hour). A back-fill whose inputs select no file at all has nothing to compute from:
a wrong topic, a wrong archive URL or a range before the archive began; `check_archive` says which,
before any Spark starts (`EmptyArchiveError`), rather than report a success with no result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from streamjoin.archiver.layout import ArchiveFile, ArchiveLayout, hour_start_ms
from streamjoin.backfill.plan import BackfillPlan, InputFeed, plan_backfill
from streamjoin.query.model import QueryDef

__all__ = [
    "EmptyArchiveError",
    "archive_files",
    "check_archive",
    "feed_files",
    "history_from",
    "require_files",
]

_HOUR_MS = 3_600_000


class EmptyArchiveError(ValueError):
    """The back-fill would read no archive file; the message names the archive, range and topics."""


def history_from(plan: BackfillPlan, feed: InputFeed) -> float:
    """Return the earliest timestamp a rows input's history is read from (`--rows-lookback`)."""
    if feed.rows is not None and plan.rows_lookback is not None:
        return plan.start - plan.rows_lookback
    return -math.inf


def feed_files(plan: BackfillPlan, feed: InputFeed, files: Sequence[ArchiveFile]) -> list[ArchiveFile]:
    """Return the files of `feed`'s topic it must read (`files`: every file of that topic)."""
    if feed.timestamp is not None:  # timed by a record field: any hour may hold any time
        return list(files)
    needed_from = feed.lower if feed.rows is None else history_from(plan, feed)
    return [
        f
        for f in files
        if hour_start_ms(f.hour) < plan.end and hour_start_ms(f.hour) + _HOUR_MS > needed_from
    ]


def archive_files(layout: ArchiveLayout, query: QueryDef) -> dict[str, list[ArchiveFile]]:
    """Return every complete file of each input topic of `query`, sorted."""
    topics = tuple(dict.fromkeys(i.topic for i in query.inputs))
    return {t: sorted(layout.files([t])) for t in topics}


def require_files(
    plan: BackfillPlan, layout: ArchiveLayout, files: Mapping[str, Sequence[ArchiveFile]]
) -> dict[int, list[ArchiveFile]]:
    """Return the files each input reads, by input index; raise `EmptyArchiveError` if none at all."""
    chosen = {feed.index: feed_files(plan, feed, files.get(feed.topic, ())) for feed in plan.feeds}
    if any(chosen.values()):
        return chosen
    why = "; ".join(
        f"topic {feed.topic!r} of input {feed.stream!r}: "
        + (
            "no file"
            if not files.get(feed.topic)
            else f"{len(files[feed.topic])} file(s), none in the hours of Kafka time the range needs"
        )
        for feed in plan.feeds
    )
    raise EmptyArchiveError(
        f"nothing to back-fill: the archive at {layout.url} ({layout.root}) has no file for "
        f"[{_number(plan.start)}, {_number(plan.end)}) ({why}); check STREAMJOIN_ARCHIVE_URL, the "
        "query's topics and the range"
    )


def check_archive(
    query: QueryDef, start: float, end: float, archive_url: str, rows_lookback: float | None = None
) -> dict[int, list[ArchiveFile]]:
    """Return the files a back-fill of `query` over `[start, end)` reads; raise `EmptyArchiveError`
    if it would read none. No Spark: a command runs it before starting one."""
    layout = ArchiveLayout(archive_url)
    plan = plan_backfill(query, start, end, rows_lookback=rows_lookback)
    return require_files(plan, layout, archive_files(layout, query))


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() else value
