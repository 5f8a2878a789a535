"""`streamjoin backfill QUERY --from T1 --to T2`: a query's results over the archive, with Spark.

Results with `t_max` in `[T1, T2)` go to the query's output topic, or to Parquet files with `--out`.
The Spark master is `--master`, else spark-submit's (when run by `spark-submit`), else
`STREAMJOIN_SPARK_MASTER`, else local mode (`local[2]`). Progress is a bar on stderr (when it is a
terminal) and, with `--status-file`, a JSON status file; the summary is one JSON line on stdout.
The query's streams are resolved as over REST (`streamjoin.query_file`): from `--streams`, else the
registry at `STREAMJOIN_REDIS_URL` when an input gives no timestamp. Exit codes: 0 done; 1 the job
failed, or the range needs no archived file (nothing to back-fill); 2 bad arguments or query, or the
`spark` extra (PySpark, pandas) is not installed; 130 cancelled.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from streamjoin.query import QueryDef
from streamjoin.query_file import QueryFileError, StreamSource, load_query
from streamjoin.settings import Settings, load_settings

__all__ = ["SPARK_EXTRA", "backfill_command", "missing_spark_extra", "register"]

SPARK_EXTRA = ("pyspark", "pandas")
"""What `pip install 'streamjoin[spark]'` adds; the demo's set-up installs the package without it."""


def missing_spark_extra() -> str | None:
    """Return why the back-fill cannot run here (the `spark` extra is not installed), else None."""
    missing = [name for name in SPARK_EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the back-fill runs on PySpark, and {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
        "not installed: install the spark extra (about 460 MB of PySpark; Java 17 is needed too), from "
        "the clone `.venv/bin/pip install -e '.[spark]'`, or `pip install 'streamjoin[spark]'`"
    )


def backfill_command(
    query_file: Annotated[Path, typer.Argument(help="The query JSON (docs/queries.md, 'The query JSON').")],
    from_: Annotated[str, typer.Option("--from", help="First t_max included: a number or ISO-8601 (ms).")],
    to: Annotated[str, typer.Option("--to", help="First t_max excluded: a number or ISO-8601 (ms).")],
    out: Annotated[
        str | None, typer.Option(help="Write Parquet files here (a directory or URL) instead of the topic.")
    ] = None,
    archive_url: Annotated[
        str | None, typer.Option(help="The archive (default: $STREAMJOIN_ARCHIVE_URL).")
    ] = None,
    bootstrap: Annotated[str | None, typer.Option("--bootstrap", "-b", help="Broker host:port.")] = None,
    master: Annotated[
        str | None,
        typer.Option(
            help="Spark master (default: spark-submit's, else $STREAMJOIN_SPARK_MASTER, else local[2])."
        ),
    ] = None,
    tasks: Annotated[
        int | None, typer.Option(help="Spark tasks of the join stage (default: 4 locally).")
    ] = None,
    driver_memory: Annotated[str, typer.Option(help="Driver memory in local mode.")] = "1g",
    rows_lookback: Annotated[
        float | None, typer.Option(help="Bound on how far before --from rows windows are looked for.")
    ] = None,
    status_file: Annotated[Path | None, typer.Option(help="Keep a JSON status file up to date here.")] = None,
    streams_file: Annotated[
        Path | None,
        typer.Option(
            "--streams",
            help="The streams the query names: a JSON list of what POST /v1/streams takes (default: the "
            "registry at $STREAMJOIN_REDIS_URL, asked only when an input gives no timestamp).",
        ),
    ] = None,
    registry_prefix: Annotated[
        str, typer.Option(help="The registry's key prefix (the control plane's).")
    ] = "streamjoin:",
) -> None:
    """Compute a query's results over an archived time range with Spark and write them."""
    from streamjoin.backfill.codecs import need_envelope_for_topic, need_registry_url
    from streamjoin.backfill.files import EmptyArchiveError, check_archive
    from streamjoin.backfill.plan import parse_time
    from streamjoin.backfill.status import StatusFile

    err = Console(stderr=True)
    status = StatusFile(status_file) if status_file is not None else None

    def refuse(message: str, code: int) -> typer.Exit:
        if status is not None:
            status.update(state="failed", error=message, finished_at=time.time())
        print(f"streamjoin backfill: {message}", file=sys.stderr)  # one line, never wrapped
        return typer.Exit(code)

    try:
        missing = missing_spark_extra()
        if missing is not None:
            raise refuse(missing, 2)
        settings = load_settings(kafka_bootstrap=bootstrap, archive_url=archive_url, spark_master=master)
        query = load_query(query_file, StreamSource(streams_file, lambda: settings, registry_prefix))
        start, end = parse_time(from_), parse_time(to)
        if end <= start:
            raise ValueError(f"--to ({to}) must be after --from ({from_})")
        need_registry_url(query, settings.schema_registry_url)
        need_envelope_for_topic(query, out)
    except (OSError, QueryFileError, ValueError) as exc:
        raise refuse(str(exc), 2) from None
    try:
        selected = check_archive(query, start, end, settings.archive_url, rows_lookback)
    except EmptyArchiveError as exc:
        raise refuse(str(exc), 1) from None
    except (OSError, ValueError) as exc:  # an archive URL that cannot be opened
        raise refuse(f"archive {settings.archive_url}: {exc}", 2) from None
    for feed_index, files in selected.items():
        if not files:
            inp = query.inputs[feed_index]
            print(
                f"streamjoin backfill: warning: no archived file of topic {inp.topic!r} (input "
                f"{inp.stream!r}) for the range: every result needs one, so there can be none",
                file=sys.stderr,
            )
    if status is not None:
        status.update(
            state="starting", query=query.name, start=start, end=end, out=out, started_at=time.time()
        )
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = _run(query, start, end, out, settings, master, tasks, driver_memory, rows_lookback, status,
                       err)  # fmt: skip
    except KeyboardInterrupt:
        if status is not None:
            status.update(state="cancelled", finished_at=time.time())
        err.print("streamjoin backfill: cancelled")
        raise typer.Exit(130) from None
    except Exception as exc:
        if status is not None:
            status.update(state="failed", error=f"{type(exc).__name__}: {exc}", finished_at=time.time())
        traceback.print_exc(file=sys.stderr)
        raise typer.Exit(1) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if status is not None:
        status.update(state="succeeded", progress=1.0, finished_at=time.time(), summary=summary)
    print(json.dumps(summary, sort_keys=True))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _run(
    query: QueryDef,
    start: float,
    end: float,
    out: str | None,
    settings: Settings,
    master: str | None,
    tasks: int | None,
    driver_memory: str,
    rows_lookback: float | None,
    status: Any,
    err: Console,
) -> dict[str, Any]:
    from streamjoin.backfill.job import BackfillJob
    from streamjoin.backfill.progress import JobProgress
    from streamjoin.backfill.session import spark_session, submitted
    from streamjoin.backfill.sink import SinkSpec
    from streamjoin.client_security import librdkafka_options

    if out is not None:
        sink = SinkSpec("parquet", out)
    else:
        security = tuple(librdkafka_options(settings).items())
        sink = SinkSpec("kafka", query.output_topic, settings.kafka_bootstrap, kafka_config=security)
    archive_url = settings.archive_url
    if master is not None or not submitted():  # under spark-submit, its master wins over the environment's
        master = settings.spark_master  # the flag (validated), else STREAMJOIN_SPARK_MASTER
    spark = spark_session(master, shuffle_partitions=tasks, driver_memory=driver_memory)
    try:
        job = BackfillJob(
            spark,
            query,
            start,
            end,
            archive_url,
            tasks=tasks,
            rows_lookback=rows_lookback,
            schema_registry_url=settings.schema_registry_url,
        )
        if status is not None:
            status.update(state="running", strategy=job.plan.strategy, progress=0.0)
        with Progress(
            TextColumn(f"back-fill {query.name}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=err,
            disable=not err.is_terminal,
        ) as bar:
            task = bar.add_task("back-fill", total=None)

            def report(progress: JobProgress) -> None:
                bar.update(task, completed=progress.tasks_done, total=progress.tasks_total or None)
                if status is not None:
                    status.update(
                        progress=round(progress.fraction, 4),
                        tasks_done=progress.tasks_done,
                        tasks_total=progress.tasks_total,
                        join_tasks_done=progress.join_done,
                        join_tasks=progress.join_total,
                    )

            summary = job.write(sink, on_progress=report)
        return summary.as_dict()
    finally:
        spark.stop()


def register(app: typer.Typer) -> None:
    """Add the `backfill` command to `app`."""
    app.command("backfill")(backfill_command)
