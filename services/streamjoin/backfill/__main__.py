"""Run `streamjoin backfill` as a script, which is what `spark-submit` needs on a cluster.

    spark-submit --master spark://host:7077 --py-files streamjoin.zip \
        "$(python -c 'import streamjoin.backfill.__main__ as m; print(m.__file__)')" \
        QUERY.json --from T1 --to T2 [--out s3a://bucket/results]

The SparkSession then takes the master and resources spark-submit gave it (see `session.py`).
"""

from __future__ import annotations

import typer

from streamjoin.cli.backfill import backfill_command

__all__ = ["main"]


def main() -> None:
    """Run the back-fill command with the process's arguments."""
    typer.run(backfill_command)


if __name__ == "__main__":
    main()
