"""Progress of a running back-fill, read from Spark's status tracker and the engine tasks' accumulator."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession

__all__ = ["JobProgress", "ProgressPoller"]


@dataclass(frozen=True, slots=True)
class JobProgress:
    """How far a running back-fill is.

    `tasks_done`/`tasks_total` count the Spark tasks of the stages submitted so far (with adaptive
    execution later stages appear as earlier ones finish, so the total grows); `fraction` is the
    share of the engine stage's tasks finished, which only grows, and is 1 once the job succeeded.
    """

    tasks_done: int
    tasks_total: int
    join_done: int
    join_total: int
    finished: bool = False

    @property
    def fraction(self) -> float:
        """Return the share of the join done: engine tasks finished of all (1 when finished)."""
        if self.finished:
            return 1.0
        return min(self.join_done / self.join_total, 0.99) if self.join_total else 0.0


class ProgressPoller:
    """Report a job group's progress from a daemon thread until stopped."""

    def __init__(
        self,
        spark: SparkSession,
        group: str,
        callback: Callable[[JobProgress], None],
        every_s: float,
        join: Callable[[], tuple[int, int]],
    ) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._group = group
        self._callback = callback
        self._every = every_s
        self._join = join
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="backfill-progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(self._every):
            self._callback(self.snapshot())

    def snapshot(self, *, finished: bool = False) -> JobProgress:
        """Return the progress now (the stages of a finished Spark job count as done, skipped ones too)."""
        done = total = 0
        for job_id in self._tracker.getJobIdsForGroup(self._group):
            job = self._tracker.getJobInfo(job_id)
            if job is None:
                continue
            succeeded = job.status == "SUCCEEDED"
            for stage_id in job.stageIds:
                info = self._tracker.getStageInfo(stage_id)
                if info is None:  # not submitted yet, or skipped
                    continue
                done += info.numTasks if succeeded else info.numCompletedTasks
                total += info.numTasks
        join_done, join_total = self._join()
        return JobProgress(done, total, join_done, join_total, finished)

    def stop(self, *, finished: bool) -> None:
        """Stop polling and report the final state once."""
        self._done.set()
        self._thread.join(timeout=5)
        self._callback(self.snapshot(finished=finished))
