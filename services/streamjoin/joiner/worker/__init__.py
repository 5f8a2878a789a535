"""One `streamjoin joiner` process.

Its life cycle (registry, queries, topics, operators per assignment), periodic checks and
statistics, background loops, and the per-query operator factories it re-plans.
"""

__all__: list[str] = []
