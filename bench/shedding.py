"""Load shedding (Ojewole et al.) on streamjoin: importance kept and throughput per policy and budget.

The paper's workloads (two streams r and s, one record of each per instant, equi-join on `k`,
windows of `w` instants): values from a Zipf distribution over a domain, skewed alike and on the
same values (*correlated*), or r skewed and s uniform (*uncorrelated*); importance rare and high
(1 for most records, 10 to 100 for one in twenty). Each policy runs in the engine (`MultiJoin`,
eager, the `shedding` field) at budgets of 10%, 25% and 50% of what the exact windows hold (2w);
the importance its output keeps is shown as a share of the offline optimum (`streamjoin.shedding`:
ODJA or the min-cost flow, exact for two inputs), with the engine's throughput (records/s, CPU of
this process). Then the paper's robust trend checks (reported, not gated).

    python bench/shedding.py            # short: N=800, w=60, domain 40 (about 90 s)
    python bench/shedding.py --full     # the docs' figures: N=2000, w=150, domain 100
    python bench/shedding.py --windows rows   # count windows of w records: the same table

With one record of each stream per instant, a count window of `w` records holds exactly what a range
window of `w` instants holds, so `--windows rows` must print the range table's results and importance
(only the throughput differs): a check of count-window shedding against the paper's figures.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamjoin.engine import MultiJoin
from streamjoin.engine.output import ResultFormatter
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.grammar import POLICY_NAMES
from streamjoin.shedding import build_instance, optimum, simulate

__all__ = ["Row", "main", "run_policy", "workload"]

BUDGETS = (0.10, 0.25, 0.50)


@dataclass(frozen=True)
class Row:
    """One policy at one budget on one workload."""

    workload: str
    budget: float
    policy: str
    importance: float
    results: int
    share_of_optimum: float
    records_per_s: float


def zipf_sampler(rng: random.Random, domain: int, skew: float) -> list[float]:
    """Return the cumulative weights of Zipf(`skew`) over 1..domain (skew 0: uniform)."""
    weights = [1.0 / (rank**skew) for rank in range(1, domain + 1)]
    total, acc, out = sum(weights), 0.0, []
    for weight in weights:
        acc += weight
        out.append(acc / total)
    return out


def workload(n: int, domain: int, correlated: bool, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Return n instants of one r and one s record each, as (stream, record) in arrival order."""
    rng = random.Random(seed)
    r_cum = zipf_sampler(rng, domain, 1.0)
    s_cum = r_cum if correlated else zipf_sampler(rng, domain, 0.0)
    mapping = list(range(domain))
    if not correlated:
        rng.shuffle(mapping)  # an independent mapping of ranks to values

    def draw(cum: list[float], values: Sequence[int]) -> int:
        x = rng.random()
        lo, hi = 0, len(cum) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cum[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return values[lo]

    def importance() -> int:
        return rng.randint(10, 100) if rng.random() < 0.05 else 1

    lines: list[tuple[str, dict[str, Any]]] = []
    for t in range(n):
        lines.append(("r", {"t": t, "k": draw(r_cum, range(domain)), "imp": importance()}))
        lines.append(("s", {"t": t, "k": draw(s_cum, mapping), "imp": importance()}))
    return lines


def query(w: int, memory: int, policy: str, windows: str = "range") -> QueryDef:
    """Return the two-way equi-join with windows of w instants (or w records) and a shedding budget."""
    window = {"range": w - 1} if windows == "range" else {"rows": w}
    return parse_query(
        {
            "name": "shed",
            "output": {"topic": "o"},
            "inputs": [{"stream": s, "timestamp": "t", "window": window} for s in "rs"],
            "where": [["r.k", "=", "s.k"]],
            "shedding": {
                "memory": memory,
                "policy": policy,
                "importance": "imp",
                "combine": "sum",
                "seed": 1,
            },
        }
    )


def run_policy(q: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]]) -> tuple[int, float, float]:
    """Run `q` in the engine; return (results, importance kept, records per CPU second)."""
    engine = MultiJoin(q)
    formatter = ResultFormatter(q)
    offsets = {"r": 0, "s": 0}
    results = []
    start = time.process_time()
    for stream, record in lines:
        engine.add(stream, record, ts=record["t"], offset=offsets[stream])
        offsets[stream] += 1
        if offsets[stream] % 64 == 0:
            results.extend(engine.advance())
    results.extend(engine.finish())
    elapsed = time.process_time() - start
    importance = sum(formatter.importance(r) for r in results)
    return len(results), importance, len(lines) / max(elapsed, 1e-9)


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Run the benchmark; print a table per workload and the trend checks."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="the docs' sizes (a few minutes)")
    parser.add_argument(
        "--windows", choices=("range", "rows"), default="range", help="range windows, or count windows"
    )
    args = parser.parse_args(argv)
    kind = args.windows
    n, w, domain = (2000, 150, 100) if args.full else (800, 60, 40)
    rows: list[Row] = []
    checks: list[tuple[str, bool]] = []
    exact_of: dict[str, float] = {}
    for name, correlated in (("uncorrelated", False), ("correlated", True)):
        lines = workload(n, domain, correlated, seed=7)
        q0 = query(w, 2 * w, "simp", kind)
        instance = build_instance(q0, [(i, s, float(r["t"]), r) for i, (s, r) in enumerate(lines, 1)])
        exact = simulate(instance)
        exact_of[name] = exact.importance
        head = f"N={n} per stream, w={w} ({kind} windows), domain {domain}"
        print(f"\n{name}: {head}; exact {len(exact.results)} results, importance {exact.importance:.0f}")
        titles = ("budget", "policy", "results", "importance", "of optimum", "records/s")
        print(" ".join(f"{t:>{width}}" for t, width in zip(titles, (7, 9, 8, 11, 10, 10), strict=True)))
        previous: dict[str, float] = {}
        for budget in BUDGETS:
            memory = max(2, int(2 * w * budget))
            best = optimum(instance, exact.results, memory // 2)
            method = f"({best.method})"
            cells = f"{best.results:>8} {best.importance:>11.0f} {1:>10.3f} {method:>10}"
            print(f"{budget:>7.0%} {'optimum':>9} {cells}")
            kept: dict[str, float] = {}
            for policy in POLICY_NAMES:
                results, importance, rate = run_policy(query(w, memory, policy, kind), lines)
                share = importance / best.importance if best.importance else 1.0
                rows.append(Row(name, budget, policy, importance, results, share, rate))
                kept[policy] = importance
                cells = f"{results:>8} {importance:>11.0f} {share:>10.3f} {rate:>10.0f}"
                print(f"{budget:>7.0%} {policy:>9} {cells}")
            checks.append(
                (
                    f"{name} {budget:.0%}: optimum >= every policy",
                    best.importance >= max(kept.values()) - 1e-6,
                )
            )
            ordered = (
                min(kept["simpprob"], kept["dimpprob"]) >= kept["frequency"] >= kept["simp"] >= kept["random"]
            )
            checks.append(
                (f"{name} {budget:.0%}: simpprob, dimpprob >= frequency >= simp >= random", ordered)
            )
            if previous:
                grew = all(kept[p] >= previous[p] for p in POLICY_NAMES)
                checks.append(
                    (f"{name} {budget:.0%}: every policy keeps at least what it kept at a lower budget", grew)
                )
            previous = kept
        full = [run_policy(query(w, 2 * w, p, kind), lines)[1] for p in POLICY_NAMES]
        checks.append(
            (
                f"{name}: every policy is exact at memory 2w",
                all(abs(v - exact.importance) < 1e-6 for v in full),
            )
        )
    skew = exact_of["correlated"] > exact_of["uncorrelated"]
    checks.append(("correlated skew keeps more importance than uncorrelated (exact)", skew))
    print("\ntrend checks (Ojewole et al., O-8; reported, not gated):")
    for label, ok in checks:
        print(f"  [{'ok' if ok else 'NO'}] {label}")
    return rows


if __name__ == "__main__":
    main()
