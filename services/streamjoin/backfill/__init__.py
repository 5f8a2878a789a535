"""The Spark back-fill: a query's results over the archive, with the live engine's semantics.

`plan` (what to read, how to split it), `stage` and `history` (the pandas stages that run inside
Spark's Python workers) and `jobs` (the control plane's job runner) import no Spark; `job`,
`session` and the `streamjoin backfill` command do. This package is the only one importing pyspark.
"""

from streamjoin.backfill.plan import BackfillPlan, InputFeed, parse_time, plan_backfill

__all__ = ["BackfillPlan", "InputFeed", "parse_time", "plan_backfill"]
