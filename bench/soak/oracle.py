"""Compare a run's output and dead letters with what the brute-force oracle says they must be.

The oracle is `streamjoin.testing.expected_results`, unchanged. A soak produces millions of records,
far beyond what a brute-force join can enumerate at once, so the ledger is cut into independent
pieces first, and the oracle runs on each piece:

- results never span partitions (keys decide partitions) nor keys (`a.k = b.k = c.k`): group by
  (partition, key);
- every window is a range window, so all components of a result lie within the largest range of
  each other: inside a group sorted by timestamp, a gap larger than the largest range separates
  records that share no result;
- no record is late (the workload keeps disorder within `lateness`, checked here), so the oracle's
  watermark, computed per piece, drops nothing either.

The pieces' results together are exactly the whole input's: a cut never separates two components
of one result, and each piece's windows are decided by the components' timestamps alone.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.soak.lost import missing_letter_times
from bench.soak.workload import POISON_KINDS, STREAMS, Ledger

from streamjoin.query import QueryDef
from streamjoin.testing import Event, expected_results

__all__ = ["DeadLetterCheck", "Expected", "Verdict", "check_dead_letters", "expected_output", "verdict"]

_REASONS = {kind.name: kind.reason for kind in POISON_KINDS}


@dataclass(frozen=True)
class Expected:
    """The oracle's answer: result ids for the output topic, and those diverted for their size."""

    results: Counter[str]
    oversized: Counter[str]


def _check_disorder(ledger: Ledger, lateness: int) -> None:
    """Fail unless every record is at least its topic-partition's largest timestamp so far - lateness."""
    largest: dict[tuple[int, int], int] = {}
    for s, p, ts in zip(ledger.stream, ledger.partition, ledger.ts, strict=True):
        top = largest.get((s, p), ts)
        if ts < top - lateness:
            raise ValueError(f"record of {STREAMS[s]}[{p}] at {ts} is behind {top} by more than {lateness}")
        largest[s, p] = max(top, ts)


def _pieces(ledger: Ledger, gap: int) -> Iterable[list[int]]:
    """Yield the indexes (in production order) of each independent piece of the ledger."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (p, k) in enumerate(zip(ledger.partition, ledger.key, strict=True)):
        groups.setdefault((p, k), []).append(i)
    ts = ledger.ts
    for indexes in groups.values():
        by_time = sorted(indexes, key=ts.__getitem__)
        start = 0
        for j in range(1, len(by_time) + 1):
            if j == len(by_time) or ts[by_time[j]] - ts[by_time[j - 1]] > gap:
                yield sorted(by_time[start:j])
                start = j


def expected_output(query: QueryDef, ledger: Ledger, topics: Mapping[str, str]) -> Expected:
    """Return the oracle's result ids over everything in `ledger`; results with a padded component
    (too large for the output) are in `oversized` instead of `results`."""
    ranges = [getattr(i.window, "range", None) for i in query.inputs]
    if any(r is None for r in ranges):
        raise ValueError("the pieced oracle needs range windows on every input")
    _check_disorder(ledger, query.lateness)
    gap = int(max(r for r in ranges if r is not None))
    names = [topics[s] for s in STREAMS]
    results: Counter[str] = Counter()
    oversized: Counter[str] = Counter()
    for piece in _pieces(ledger, gap):
        if len({ledger.stream[i] for i in piece}) < len(STREAMS):
            continue  # a result needs a component of every input
        events = [
            Event(
                STREAMS[ledger.stream[i]],
                ledger.partition[i],
                ledger.offset[i],
                ledger.ts[i],
                {"ts": ledger.ts[i], "k": ledger.key[i], "v": ledger.value[i]},
            )
            for i in piece
        ]
        for key, n in expected_results(query, events).items():
            rid = "|".join(f"{names[j]}:{p}:{off}" for j, (p, off) in enumerate(key))
            big = any((j, p, off) in ledger.padded for j, (p, off) in enumerate(key))
            (oversized if big else results)[rid] += n
    return Expected(results, oversized)


@dataclass(frozen=True)
class DeadLetterCheck:
    """The dead-letter topic against the injected bad records (and the oversized results' references)."""

    injected: int
    received: int
    missing: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wrong_reason: list[str] = field(default_factory=list)
    references_expected: int = 0
    references_lost: int = 0
    references_duplicated: int = 0
    references_extra: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the dead letters are the injected bad records plus a reference per oversized result."""
        return not (
            self.missing
            or self.duplicated
            or self.extra
            or self.wrong_reason
            or self.references_lost
            or self.references_duplicated
            or self.references_extra
        )


def check_dead_letters(
    ledger: Ledger,
    topics: Mapping[str, str],
    letters: Sequence[tuple[Mapping[str, bytes], bytes]],
    oversized: Counter[str],
) -> DeadLetterCheck:
    """Compare dead letters (headers, value) with the ledger's poison and the oversized results."""
    want = {(topics[STREAMS[s]], p, off): kind for s, p, off, kind in ledger.poison}
    seen: Counter[tuple[str, int, int]] = Counter()
    refs: Counter[str] = Counter()
    extra, wrong = [], []
    for headers, _value in letters:
        if "result-id" in headers:
            refs[headers["result-id"].decode()] += 1
            continue
        source = (
            headers["source-topic"].decode(),
            int(headers["source-partition"]),
            int(headers["source-offset"]),
        )
        seen[source] += 1
        kind = want.get(source)
        reason = headers.get("reason", b"").decode(errors="replace")
        if kind is None:
            extra.append(f"{source}: {reason}")
        elif _REASONS[kind] not in reason:
            wrong.append(f"{kind} at {source}: {reason}")
    by_kind = Counter(kind for source, kind in want.items() if seen[source])
    missing = {src: kind for src, kind in want.items() if not seen[src]}
    index = {(topics[STREAMS[s]], p, off): (s, p, off) for s, p, off, _ in ledger.poison}
    times = missing_letter_times(ledger, [index[src] for src in missing])
    when = {src: times[index[src]] for src in missing if index[src] in times}
    return DeadLetterCheck(
        injected=len(want),
        received=len(letters),
        missing=[f"{kind} at {src} (produced at {when.get(src, '?')} s)" for src, kind in missing.items()],
        duplicated=[f"{want.get(src)} at {src} x{n}" for src, n in seen.items() if n > 1],
        extra=extra,
        wrong_reason=wrong,
        references_expected=sum(oversized.values()),
        references_lost=sum((oversized - refs).values()),
        references_duplicated=sum(n - oversized[r] for r, n in refs.items() if 0 < oversized[r] < n),
        references_extra=sum(n for r, n in refs.items() if oversized[r] == 0),
        by_kind=dict(sorted(by_kind.items())),
    )


@dataclass(frozen=True)
class Verdict:
    """A run's output against the oracle: the issue's figures are `lost`, `duplicated` and `extra`."""

    expected: int
    received: int
    lost: int
    duplicated: int
    extra: int
    dead: DeadLetterCheck

    @property
    def ok(self) -> bool:
        """Whether nothing was lost, duplicated or extra, and the dead letters are the injected ones."""
        return self.lost == 0 and self.duplicated == 0 and self.extra == 0 and self.dead.ok

    def as_json(self) -> dict[str, Any]:
        """Return the verdict as JSON-ready data."""
        dead = self.dead
        return {
            "ok": self.ok,
            "expected": self.expected,
            "received": self.received,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "extra": self.extra,
            "dead_letters": {
                "injected": dead.injected,
                "received": dead.received,
                "missing": len(dead.missing),
                "duplicated": len(dead.duplicated),
                "extra": len(dead.extra),
                "wrong_reason": len(dead.wrong_reason),
                "references_expected": dead.references_expected,
                "references_lost": dead.references_lost,
                "references_duplicated": dead.references_duplicated,
                "references_extra": dead.references_extra,
                "by_kind": dead.by_kind,
                "examples": (dead.missing + dead.duplicated + dead.extra + dead.wrong_reason)[:10],
            },
        }

    def summary(self) -> str:
        """Return one line: the figures the issue asks for."""
        d = self.dead
        return (
            f"{'OK' if self.ok else 'FAILED'}: {self.received:,} results of {self.expected:,} expected: "
            f"{self.lost} lost, {self.duplicated} duplicated, {self.extra} extra; dead letters "
            f"{d.injected} injected, {d.received - d.references_expected} poison received "
            f"({len(d.missing)} missing, {len(d.duplicated)} doubled, {len(d.extra)} extra, "
            f"{len(d.wrong_reason)} wrong reason), {d.references_expected} oversized-result references "
            f"({d.references_lost} lost, {d.references_duplicated} doubled, {d.references_extra} extra)"
        )


def verdict(expected: Expected, got: Counter[str], dead: DeadLetterCheck) -> Verdict:
    """Return the comparison of the output's result ids `got` with the oracle's: `lost` counts
    expected results missing, `duplicated` the extra copies of expected ones, `extra` results the
    oracle does not expect at all."""
    want = expected.results
    return Verdict(
        expected=sum(want.values()),
        received=sum(got.values()),
        lost=sum((want - got).values()),
        duplicated=sum(n - want[r] for r, n in got.items() if 0 < want[r] < n),
        extra=sum(n for r, n in got.items() if want[r] == 0),
        dead=dead,
    )


def result_id(value: bytes) -> str:
    """Return a result record's `id`."""
    return str(json.loads(value)["id"])
