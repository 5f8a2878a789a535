"""Entry point of the `streamjoin` command: mounts every sub-command module.

Each sub-command lives in its own module under `streamjoin.cli` and exposes a `register(app)`
function, so this file stays a table of contents.
"""

from __future__ import annotations

import importlib

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="streamjoin",
    help="Continuous sliding-window multi-way joins over Kafka topics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Continuous sliding-window multi-way joins over Kafka topics."""


# Sub-command modules, each with `register(app: typer.Typer) -> None`.
_COMMANDS = ("replay", "plan", "dev", "topics", "archiver", "backfill", "api", "joiner", "shed_eval")

for _name in _COMMANDS:
    importlib.import_module(f"streamjoin.cli.{_name}").register(app)


def main() -> None:
    """Run the command line."""
    app()


if __name__ == "__main__":
    main()
