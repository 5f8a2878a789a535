"""`/v1/queries/{name}/backfills`: start a Spark back-fill of a query, follow its progress, cancel it."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, HTTPException, status

from streamjoin.api.deps import BackfillJobsDep, QueryServiceDep
from streamjoin.api.routes.responses import errors
from streamjoin.api.schemas.backfills import BackfillCreate, BackfillPublic
from streamjoin.backfill.jobs import BackfillJobStatus, BackfillRefused, JobNotFoundError

__all__ = ["router"]

router = APIRouter(prefix="/queries/{name}/backfills", tags=["backfills"])


def _public(job: BackfillJobStatus) -> BackfillPublic:
    return BackfillPublic(**job.as_dict())


def _one(name: str, job_id: str, find: Callable[[str, str], BackfillJobStatus]) -> BackfillPublic:
    """Return `find(name, job_id)` as the API shows it; a 404 if there is no such job."""
    try:
        return _public(find(name, job_id))
    except JobNotFoundError:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no back-fill job {job_id!r} for query {name!r}"
        ) from None


@router.post("", status_code=status.HTTP_202_ACCEPTED, responses=errors(404, 422))
async def start_backfill(
    name: str, body: BackfillCreate, queries: QueryServiceDep, jobs: BackfillJobsDep
) -> BackfillPublic:
    """Start back-filling the query over the archive; the job runs in the background."""
    if body.to <= body.from_:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "to: must be after from")
    query = await queries.get(name)
    try:
        job = jobs.start(query.definition, body.from_, body.to, out=body.out)
    except BackfillRefused as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return _public(job)


@router.get("", responses=errors(404))
async def list_backfills(name: str, queries: QueryServiceDep, jobs: BackfillJobsDep) -> list[BackfillPublic]:
    """List the query's back-fill jobs with their state and progress."""
    await queries.get(name)
    return [_public(job) for job in jobs.list(name)]


@router.get("/{job_id}", responses=errors(404))
async def get_backfill(name: str, job_id: str, jobs: BackfillJobsDep) -> BackfillPublic:
    """Read one back-fill job's state and progress."""
    return _one(name, job_id, jobs.get)


@router.delete("/{job_id}", responses=errors(404))
async def cancel_backfill(name: str, job_id: str, jobs: BackfillJobsDep) -> BackfillPublic:
    """Cancel a running back-fill job (its partial output stays)."""
    return _one(name, job_id, jobs.cancel)
