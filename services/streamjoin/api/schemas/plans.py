"""Bodies of `/v1/queries/{name}/plan` and `/replan`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["PlanPublic", "ReplanPublic"]


class PlanPublic(BaseModel):
    """The join orders a joiner chose for a query, their estimated cost and the statistics behind them.

    `estimated_cost` is per timestamp unit, `observed_cost` per input record; the two
    `..._per_record` fields put both in one unit (comparisons per input record), to compare.
    """

    query: str
    planned: bool = Field(description="False until a joiner publishes a plan.")
    requested_order: str | list[str] = Field(description='The order control: "auto" or a fixed order.')
    global_order: list[str] | None
    local_orders: dict[str, list[str]] | None = Field(
        description="Per origin stream, the order its records probe."
    )
    estimated_cost: float | None = Field(
        description="The cost model's estimate: comparisons per timestamp unit, over all partitions."
    )
    observed_cost: float | None = Field(
        description="Measured probes + comparisons per input record, summed over partitions' ratios "
        "(a per-partition figure: compare `observed_cost_per_record` with `estimated_cost_per_record`)."
    )
    estimated_cost_per_record: float | None = Field(
        default=None,
        description="`estimated_cost` divided by the input rate the plan was chosen from (the summed "
        "`rate` of `statistics`): comparisons per input record.",
    )
    observed_cost_per_record: float | None = Field(
        default=None,
        description="Measured probes + comparisons per input record, over all partitions "
        "(each partition's ratio weighted by its `records_in`).",
    )
    reason: str | None
    changed_at: float | None
    plan_changes: int
    statistics: dict[str, Any] = Field(
        description="Per stream, the cost-model inputs the plan was chosen from."
    )
    replan_pending: str | None = Field(description="The id of a re-plan request not yet handled.")
    bounds: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Per pair of inputs, the tightest bound on their timestamps' distance (`within` pairs "
        "and range windows, tightened by shortest paths): `streams`, `bound`, `given`, `path`.",
    )
    partitioning: dict[str, Any] | None = Field(
        default=None,
        description="How the inputs reach the operator partitions, as the joiner planned it from the "
        "topics' partition counts (docs/partitioning.md): `partitions`, `single_partition`, per input "
        "`inputs` (`stream`, `topic`, `attribute`, `rekeyed`, `internal_topic`, `reason`) and the "
        "`repartitioned` ones; null until a joiner published it.",
    )


class ReplanPublic(BaseModel):
    """An accepted re-plan request."""

    query: str
    request_id: str
    registry_version: int
