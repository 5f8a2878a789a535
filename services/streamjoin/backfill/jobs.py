"""Start and watch back-fill jobs for the control plane (`POST/GET /v1/queries/{name}/backfills`).

A job is a `streamjoin backfill` subprocess in its own process group, waited for by a thread of its
own as soon as it exits (no zombie is left whether or not anyone reads its status), with a
directory of its own:

    {root}/{query}/{job id}/query.json    the query definition it runs
    {root}/{query}/{job id}/status.json   written by the job (state, progress, summary, error)
    {root}/{query}/{job id}/job.log       its stderr and stdout

This class imports no Spark (the control plane must not): it only spawns the command and reads
status files, so any number of API instances sharing `root` see the same jobs. A job whose process
is gone without a final state is reported `failed` ("exited without a status").

With `out_root` (the control plane passes `STREAMJOIN_API_BACKFILL_OUT_DIR`), a job's Parquet `out`
path must resolve inside that directory (a relative path is taken from it): a client cannot make the
server write anywhere else (`OutPathError`).

>>> import tempfile
>>> jobs = BackfillJobs(tempfile.mkdtemp())
>>> jobs.list("flows")
[]
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamjoin.backfill.codecs import need_envelope_for_topic, need_registry_url
from streamjoin.backfill.status import TERMINAL_STATES, StatusFile
from streamjoin.query import QueryError, parse_query

__all__ = ["BackfillJobStatus", "BackfillJobs", "BackfillRefused", "JobNotFoundError", "OutPathError"]

REGISTRY_URL_ENV = "STREAMJOIN_SCHEMA_REGISTRY_URL"
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class JobNotFoundError(KeyError):
    """No such back-fill job for that query."""


class OutPathError(ValueError):
    """The `out` path of a job is outside the directory back-fill output is confined to."""


class BackfillRefused(ValueError):
    """A back-fill that cannot run as asked (the message says why): nothing was started."""


@dataclass(frozen=True, slots=True)
class BackfillJobStatus:
    """What the control plane reports about one back-fill job."""

    id: str
    query: str
    state: str
    start: float | None
    end: float | None
    out: str | None
    progress: float
    tasks_done: int
    tasks_total: int
    started_at: float | None
    finished_at: float | None
    error: str | None
    summary: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        """Return the status as a JSON-able dict."""
        return asdict(self)


class BackfillJobs:
    """Spawn `streamjoin backfill` jobs and report their status from their status files."""

    def __init__(
        self,
        root: str | Path,
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        out_root: str | Path | None = None,
    ) -> None:
        """Keep jobs under `root`.

        Args:
            root: directory of the job directories (created if missing).
            command: the `streamjoin` command to run (default: the one installed next to Python).
            env: extra environment of the jobs (e.g. `Settings.as_env()`: archive, broker).
            out_root: the only directory `out` paths may point into; None: anywhere (the CLI).
        """
        self.root = Path(root)
        self.out_root = Path(out_root).resolve() if out_root is not None else None
        self.root.mkdir(parents=True, exist_ok=True)
        self._command = list(command) if command else _default_command()
        self._env = dict(env or {})
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self,
        query: Mapping[str, Any],
        start: float | str,
        end: float | str,
        *,
        out: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> BackfillJobStatus:
        """Start a back-fill of `query` (its JSON definition) over `[start, end)`; return its status."""
        name = str(query.get("name", ""))
        if not name or not set(name) <= _NAME_OK:
            raise ValueError(f"query name {name!r} cannot name a job directory")
        self._check_registry(query, out)
        if out is not None:
            out = self.out_path(out)
        job_id = uuid.uuid4().hex[:12]
        directory = self.root / name / job_id
        directory.mkdir(parents=True)
        query_file = directory / "query.json"
        query_file.write_text(json.dumps(dict(query)), encoding="utf-8")
        status = StatusFile(directory / "status.json")
        status.update(
            id=job_id,
            query=name,
            state="starting",
            start=_number(start),
            end=_number(end),
            out=out,
            started_at=time.time(),
        )
        argv = [*self._command, "backfill", str(query_file), "--from", str(start), "--to", str(end),
                "--status-file", str(status.path), *extra_args]  # fmt: skip
        if out is not None:
            argv += ["--out", out]
        with open(directory / "job.log", "ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self._env},
                start_new_session=True,
            )
        self._processes[job_id] = process
        # Wait for the child as soon as it exits, whoever asks about the job: a child nobody waits
        # for stays a zombie of this process (the control plane) until its status is read.
        threading.Thread(target=process.wait, name=f"backfill-{job_id}", daemon=True).start()
        status.update(pid=process.pid)
        return self.get(name, job_id)

    def _check_registry(self, query: Mapping[str, Any], out: str | None) -> None:
        """Refuse a query with Avro inputs when its jobs would have no schema registry URL, and one
        whose output topic holds flat or Avro rows when the results would go there."""
        try:
            parsed = parse_query(dict(query))
        except QueryError:
            return  # the job itself says what is wrong with the query
        url = self._env.get(REGISTRY_URL_ENV) or os.environ.get(REGISTRY_URL_ENV)
        try:
            need_registry_url(parsed, url)
            need_envelope_for_topic(parsed, out)
        except ValueError as exc:
            raise BackfillRefused(str(exc)) from None

    def out_path(self, out: str) -> str:
        """Return `out` resolved (inside `out_root` when set); raise `OutPathError` if it escapes."""
        if self.out_root is None:
            return out
        if not out or "\x00" in out:
            raise OutPathError("out: must be a path")
        path = (self.out_root / out).resolve()  # an absolute `out` stays itself; symlinks resolved
        if path == self.out_root or not path.is_relative_to(self.out_root):
            raise OutPathError(f"out: must be a path inside the back-fill output directory {self.out_root}")
        return str(path)

    def get(self, query: str, job_id: str) -> BackfillJobStatus:
        """Return the status of one job."""
        path = self._directory(query, job_id) / "status.json"
        if not path.exists():
            raise JobNotFoundError(f"no back-fill {job_id!r} for query {query!r}")
        raw = StatusFile(path).read()
        state = str(raw.get("state", "starting"))
        if state not in TERMINAL_STATES and not self._alive(job_id, raw.get("pid")):
            state = "failed"
            raw.setdefault("error", "the job exited without a final status; see job.log")
        return BackfillJobStatus(
            id=job_id,
            query=query,
            state=state,
            start=raw.get("start"),
            end=raw.get("end"),
            out=raw.get("out"),
            progress=float(raw.get("progress", 1.0 if state == "succeeded" else 0.0)),
            tasks_done=int(raw.get("tasks_done", 0)),
            tasks_total=int(raw.get("tasks_total", 0)),
            started_at=raw.get("started_at"),
            finished_at=raw.get("finished_at"),
            error=raw.get("error"),
            summary=raw.get("summary"),
        )

    def list(self, query: str) -> list[BackfillJobStatus]:
        """Return the jobs of a query, oldest first."""
        directory = self.root / query
        if not set(query) <= _NAME_OK or not directory.is_dir():
            return []
        statuses = [self.get(query, d.name) for d in directory.iterdir() if (d / "status.json").exists()]
        return sorted(statuses, key=lambda s: s.started_at or 0.0)

    def cancel(self, query: str, job_id: str, *, timeout_s: float = 10.0) -> BackfillJobStatus:
        """Stop a running job (SIGTERM to its process group, SIGKILL after `timeout_s`)."""
        status = self.get(query, job_id)
        pid = StatusFile(self._directory(query, job_id) / "status.json").read().get("pid")
        if status.state in TERMINAL_STATES or not isinstance(pid, int):
            return status
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while self._alive(job_id, pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._alive(job_id, pid):
            _signal_group(pid, signal.SIGKILL)
            self._reap(job_id, timeout_s=2.0)
        current = self.get(query, job_id)
        if current.state not in TERMINAL_STATES or current.state == "failed":
            StatusFile(self._directory(query, job_id) / "status.json").update(
                state="cancelled", finished_at=time.time()
            )
        return self.get(query, job_id)

    def wait(self, query: str, job_id: str, *, timeout_s: float) -> BackfillJobStatus:
        """Wait until the job reaches a final state or `timeout_s` passes; return its status."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = self.get(query, job_id)
            if status.state in TERMINAL_STATES or time.monotonic() >= deadline:
                return status
            time.sleep(0.2)

    def _directory(self, query: str, job_id: str) -> Path:
        if not set(query) <= _NAME_OK or not set(job_id) <= _NAME_OK:
            raise JobNotFoundError(f"no back-fill {job_id!r} for query {query!r}")
        return self.root / query / job_id

    def _alive(self, job_id: str, pid: object) -> bool:
        process = self._processes.get(job_id)
        if process is not None:
            return process.poll() is None
        if not isinstance(pid, int):
            return True  # not spawned yet by the instance that owns it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _reap(self, job_id: str, *, timeout_s: float) -> None:
        process = self._processes.get(job_id)
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=timeout_s)


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _number(value: float | str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _default_command() -> list[str]:
    installed = Path(sys.executable).with_name("streamjoin")
    if installed.exists():
        return [str(installed)]
    found = shutil.which("streamjoin")
    if found is not None:
        return [found]
    return [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]
