"""Entry point of the `streamjoin` command: mounts every sub-command module.

Each sub-command lives in its own module under `streamjoin.cli` and exposes a `register(app)`
function, so this file stays a table of contents. `main()` imports only the module of the command
it runs: each pulls in its own clients (Kafka, Redis, Spark, FastAPI), about a second in all, which
a `replay` or a `joiner` start-up should not pay. `app` (every command: what `--help`, the tests
and the docs see) is built when first asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

__all__ = ["build_app", "main"]  # and `app`, built on first access (see `__getattr__`)

# Sub-command modules, each with `register(app: typer.Typer) -> None`; the command is the module's
# name with `-` for `_`.
_COMMANDS = ("replay", "plan", "dev", "topics", "archiver", "backfill", "api", "joiner", "shed_eval")


def _root() -> None:
    """Continuous sliding-window multi-way joins over Kafka topics."""


def build_app(modules: Sequence[str] = _COMMANDS) -> typer.Typer:
    """The command line with the sub-commands of `modules` (all by default)."""
    app = typer.Typer(
        name="streamjoin",
        help="Continuous sliding-window multi-way joins over Kafka topics.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    for name in modules:
        importlib.import_module(f"streamjoin.cli.{name}").register(app)
    return app


def _modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """Only the named command's module when the command line names one, otherwise every one (so
    that `streamjoin --help` lists them all)."""
    named = argv[1].replace("-", "_") if len(argv) > 1 else ""
    return (named,) if named in _COMMANDS else _COMMANDS


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run the command line."""
    build_app(_modules_for(sys.argv))()


if __name__ == "__main__":
    main()
