"""Schemas of `/v1/queries/{name}/backfills`: start a back-fill job, read its status."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BackfillCreate", "BackfillPublic"]


class BackfillCreate(BaseModel):
    """Back-fill a query over the archived range [from, to) of result timestamps."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: float = Field(
        alias="from",
        allow_inf_nan=False,
        ge=-(2**53),
        le=2**53,
        description="Start of the range (result `ts`, inclusive).",
    )
    to: float = Field(
        allow_inf_nan=False,
        ge=-(2**53),
        le=2**53,
        description="End of the range (exclusive); must be after `from`.",
    )
    out: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Write Parquet here (inside the server's back-fill output directory) instead of the "
        "query's output topic.",
    )


class BackfillPublic(BaseModel):
    """One back-fill job: its state (starting, running, succeeded, failed, cancelled) and progress.

    The HTTP form of `streamjoin.backfill.jobs.BackfillJobStatus`, field for field: a field added to
    or renamed in one and not the other fails the conversion (`extra="forbid"`, no defaults).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    query: str
    state: str
    start: float | None
    end: float | None
    out: str | None
    progress: float = Field(description="Fraction of the Spark tasks done, 0 to 1.")
    tasks_done: int
    tasks_total: int
    started_at: float | None
    finished_at: float | None
    error: str | None
    summary: dict[str, Any] | None
