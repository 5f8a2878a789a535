"""Summaries of the Kafka mode's runs: per workload and system, best and range, the CPU ratios to
the one-worker joiner, latency beside them, the markdown table; and the latency runs' input rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.peers.report import range_text

__all__ = ["markdown", "rates_for_latency", "summarise"]

_REFERENCE = "joiner"


def _span(values: list[float]) -> list[float]:
    return [round(min(values), 2), round(max(values), 2)]


def summarise(runs: Sequence[dict[str, Any]], latencies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per (workload, system) with its figures and ratios."""
    rows: list[dict[str, Any]] = []
    for workload, system in dict.fromkeys((r["workload"], r["system"]) for r in runs):
        mine = [r for r in runs if (r["workload"], r["system"]) == (workload, system)]
        records = mine[0]["records"]
        cpu = _span([r["cpu_s"] for r in mine])
        wall = _span([r["wall_s"] for r in mine])
        rows.append(
            {
                "workload": workload,
                "system": system,
                "records": records,
                "results": mine[0]["results"],
                "runs": len(mine),
                "cpu_s": cpu,
                "broker_cpu_s": _span([r["broker_cpu_s"] for r in mine]),
                "wall_s": wall,
                "cpu_to_first_s": _span([r["cpu_to_first_s"] or 0.0 for r in mine]),
                "records_per_cpu_s": round(records / cpu[0]),
                # Start-up left out: the CPU from the first result on (nearly every record is read
                # after it, except in a system that reads the whole backlog before it emits).
                "records_per_cpu_s_after_first": round(
                    records / min(r["cpu_s"] - (r["cpu_to_first_s"] or 0.0) for r in mine)
                ),
                "records_per_s": round(records / wall[0]),
                "peak_rss_mib": round(max(r["peak_rss_kb"] for r in mine) / 1024),
            }
        )
    for row in rows:
        lat = [x for x in latencies if (x["workload"], x["system"]) == (row["workload"], row["system"])]
        if lat:
            row["latency"] = {k: lat[-1][k] for k in ("rate", "p50_ms", "p99_ms", "max_ms")}
    best = {(r["workload"], r["system"]): r for r in rows}
    for row in rows:
        ref = best.get((row["workload"], _REFERENCE))
        if ref is not None:
            row["cpu_vs_joiner"] = round(row["cpu_s"][0] / ref["cpu_s"][0], 2)
            row["cpu_after_first_vs_joiner"] = round(
                ref["records_per_cpu_s_after_first"] / row["records_per_cpu_s_after_first"], 2
            )
            row["wall_vs_joiner"] = round(row["wall_s"][0] / ref["wall_s"][0], 2)
    return rows


def rates_for_latency(runs: Sequence[dict[str, Any]], fixed: int, workloads: Sequence[str]) -> dict[str, int]:
    """Return each workload's latency input rate: `fixed`, else half the slowest system's best
    records/s (from start to the last result), rounded down to two significant digits."""
    rates: dict[str, int] = {}
    for workload in workloads:
        if fixed:
            rates[workload] = fixed
            continue
        best: dict[str, float] = {}
        for r in runs:
            if r["workload"] == workload:
                best[r["system"]] = max(best.get(r["system"], 0.0), r["records"] / r["wall_s"])
        half = min(best.values()) / 2
        digits = max(len(str(int(half))) - 2, 0)
        rates[workload] = max(int(half) // 10**digits * 10**digits, 10)
    return rates


def markdown(rows: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    """Return the summary as a markdown table."""
    head = (
        "| workload | records | results | system | CPU s | broker CPU s | wall s | records/CPU-s "
        "| records/CPU-s after 1st result | peak RSS MiB | CPU / joiner | latency rate | p50 ms | p99 ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = []
    for r in rows:
        lat = r.get("latency", {})
        body.append(
            f"| {r['workload']} | {r['records']:,} | {r['results']:,} "
            f"| {labels.get(r['system'], r['system'])} "
            f"| {range_text(r['cpu_s'])} | {range_text(r['broker_cpu_s'])} | {range_text(r['wall_s'])} "
            f"| {r['records_per_cpu_s']:,} | {r['records_per_cpu_s_after_first']:,} "
            f"| {r['peak_rss_mib']:,} | {r.get('cpu_vs_joiner', '')} "
            f"| {lat.get('rate', '')} | {lat.get('p50_ms', '')} | {lat.get('p99_ms', '')} |\n"
        )
    return head + "".join(body)
