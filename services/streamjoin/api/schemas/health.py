"""Bodies of `/healthz` and `/readyz`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = ["Health", "Readiness", "ReadinessCheck"]


class Health(BaseModel):
    """The process is alive."""

    status: Literal["ok"] = "ok"
    version: str


class ReadinessCheck(BaseModel):
    """One dependency checked."""

    name: str
    ok: bool
    detail: str
    latency_ms: int


class Readiness(BaseModel):
    """Whether Redis and the broker answer."""

    ready: bool
    checks: list[ReadinessCheck]
