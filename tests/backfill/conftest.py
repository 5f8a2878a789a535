"""Fixtures of the back-fill tests: one local SparkSession for the whole session (it is slow to start)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """Return a local[2] SparkSession with 4 shuffle partitions; stop it at the end of the session."""
    pytest.importorskip("pyspark")
    from streamjoin.backfill.session import spark_session

    session = spark_session("local[2]", shuffle_partitions=4, driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()
