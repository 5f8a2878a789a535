"""Run `streamjoin backfill` as a script, which is what `spark-submit` needs on a cluster.

    spark-submit --master spark://host:7077 --py-files streamjoin.zip \
        "$(python -c 'import streamjoin.cli.spark_submit as m; print(m.__file__)')" \
        QUERY.json --from T1 --to T2 [--out s3a://bucket/results]

The SparkSession then takes the master and resources spark-submit gave it
(`streamjoin.backfill.session`). The script is a host of the back-fill, so it lives with the CLI:
`streamjoin.backfill` imports no command-line code (the layers contract in pyproject.toml).
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
