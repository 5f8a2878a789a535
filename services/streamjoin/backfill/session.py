"""Build the SparkSession of a back-fill: local mode by default, whatever `spark-submit` says otherwise.

Local mode is sized for a small machine: `local[2]`, 4 shuffle partitions, 1 GiB of driver memory,
no web UI, and Arrow for the pandas stages. Under `spark-submit` (the master is already configured)
nothing here overrides the cluster's settings except what the back-fill needs (Arrow batches).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "spark_session", "submitted"]

DEFAULT_MASTER = "local[2]"


def submitted() -> bool:
    """Return whether this process is a driver started by `spark-submit` (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    master: str | None = None,
    *,
    shuffle_partitions: int | None = None,
    driver_memory: str = "1g",
    app_name: str = "streamjoin-backfill",
    extra: dict[str, str] | None = None,
) -> SparkSession:
    """Return a SparkSession: `master` if given, the one spark-submit set, else local[2].

    Args:
        master: Spark master URL; None keeps spark-submit's, or runs `local[2]`.
        shuffle_partitions: tasks of the join stage (default 4 locally, the cluster's otherwise).
        driver_memory: driver heap in local mode (it runs the executors too).
        app_name: the application name.
        extra: further Spark settings.
    """
    # Under spark-submit the driver's JVM already runs and hands Python its gateway port; a SparkConf
    # read now would not see spark-submit's settings yet (there is no JVM to read them from).
    builder: Any = SparkSession.builder.appName(app_name)
    settings: dict[str, str] = {
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "5000",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "true",
    }
    if master is not None or not submitted():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        settings.update(
            {
                "spark.master": master or DEFAULT_MASTER,
                "spark.driver.memory": driver_memory,
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": str(shuffle_partitions or 4),
            }
        )
        if (master or DEFAULT_MASTER).startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            settings["spark.driver.host"] = "127.0.0.1"
            settings["spark.driver.bindAddress"] = "127.0.0.1"
    elif shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(extra or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session: SparkSession = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
