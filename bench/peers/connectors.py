"""The peers' Kafka connectors, from Maven Central: Flink SQL's and Spark's (`maven/*.pom.xml`).

Resolved once into the streamjoin cache (`streamjoin.dev.jars.resolve`, the folder named by the
hash of the pom) and handed to the jobs as local jars: PyFlink's `pipeline.jars`, Spark's
`spark.jars` (no Ivy, no `--packages`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from streamjoin.dev.jars import resolve

__all__ = ["Connector", "jars"]

Connector = Literal["flink-kafka", "spark-kafka"]
_MAVEN = Path(__file__).with_name("maven")


def jars(connector: Connector) -> list[Path]:
    """Return the jars of `connector`, resolving them the first time."""
    folder = resolve(_MAVEN / f"{connector}.pom.xml", f"peers-{connector}")
    return sorted(folder.glob("*.jar"))
