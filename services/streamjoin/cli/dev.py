"""`streamjoin dev up`: the whole product on a laptop, on the embedded broker and Redis.

Starts the stack (with `--schema-registry`, also a schema registry, whose URL the control plane
and the joiner are given), runs the steps of `streamjoin.dev.steps` (create the topics, round-trip a
record through the broker and Redis, start the control plane and a joiner, and, unless `--no-demo`,
run the demo), prints where everything runs, then waits for Ctrl-C or SIGTERM and stops everything.
"""

from __future__ import annotations

import logging
import shlex
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from streamjoin.dev.process import ProcessService
from streamjoin.dev.procscan import pid_alive
from streamjoin.dev.services import EmbeddedApi
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.dev.steps import DevContext
from streamjoin.dev.supervisor import Restart, Supervisor
from streamjoin.dev.up import default_steps
from streamjoin.topics import CatalogError, load_catalog

__all__ = ["export_lines", "print_exports", "register", "stack_environment", "up"]

_log = logging.getLogger(__name__)
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def register(app: typer.Typer) -> None:
    """Mount `streamjoin dev ...` on the main command."""
    dev_app = typer.Typer(
        help="Run streamjoin on this machine: the embedded broker, Redis and the services.",
        no_args_is_help=True,
    )
    dev_app.command("up")(up)
    app.add_typer(dev_app, name="dev")


def up(
    exit_after_check: Annotated[
        bool, typer.Option("--exit-after-check", help="Stop right after the checks instead of waiting.")
    ] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="Directory for logs and data (default: a temporary one).")
    ] = None,
    keep_logs: Annotated[
        bool, typer.Option("--keep-logs", help="Keep the temporary directory at exit.")
    ] = False,
    topics_file: Annotated[
        Path | None,
        typer.Option("--topics-file", envvar="STREAMJOIN_TOPICS_FILE", help="The topic declaration."),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo/--no-demo",
            help="Register a demo query, feed it and show results (--no-demo: the stack only, API and "
            "joiner included, nothing registered).",
        ),
    ] = True,
    schema_registry: Annotated[
        bool,
        typer.Option(
            "--schema-registry",
            help="Also run a schema registry (Apicurio Registry, Confluent API) for Avro streams and "
            "outputs; the services get its URL (docs/formats.md).",
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug details.")] = False,
) -> None:
    """Start the embedded stack, check it end to end, show where it runs; stop on Ctrl-C."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    console = Console(highlight=False)
    try:
        catalog = load_catalog(topics_file)
    except CatalogError as exc:
        console.print(f"[red]✗[/] {exc}")
        raise typer.Exit(2) from exc
    stack = EmbeddedStack(workdir=workdir, keep_workdir=keep_logs, schema_registry=schema_registry)
    failed = False
    with _signals_interrupt():
        try:
            base = _base_services(stack)
            with console.status(f"starting {' and '.join(what for what, _ in base)}"):
                stack.start()
            started = " and ".join(f"{what} in {service.ready_ms} ms" for what, service in base)
            console.print(f"[green]✓[/] started {started}")
            context = DevContext(stack, catalog)
            for step in default_steps(demo=demo):
                with console.status(f"{step.title}…"):
                    outcome = step.run(context)
                console.print(f"[green]✓[/] {step.title}: {outcome}")
            console.print(_where_table(stack, context, keep_logs=keep_logs or workdir is not None))
            print_exports(console, export_lines(stack_environment(stack)))
            if not exit_after_check:
                console.print("[bold]Running.[/] Press Ctrl-C to stop.")
                _watch(stack, console)
        except KeyboardInterrupt:
            console.print("\ninterrupted")
        except Exception as exc:
            failed = True
            _log.debug("dev up failed", exc_info=True)
            console.print(f"[red]✗ {type(exc).__name__}:[/] {exc}")
        finally:
            _stop(stack, console, failed=failed)
    if failed:
        raise typer.Exit(1)


def _base_services(stack: EmbeddedStack) -> list[tuple[str, ProcessService]]:
    """What the stack starts before the steps, named for the console."""
    services: list[tuple[str, ProcessService]] = [("the broker", stack.broker), ("Redis", stack.redis)]
    if stack.schema_registry is not None:
        services.append(("the schema registry", stack.schema_registry))
    return services


def _watch(stack: EmbeddedStack, console: Console) -> None:
    """Return never: start again a service that exits, as compose or Kubernetes would; raise when one
    cannot come back (Redis, the memory-only Tansu) or keeps dying (docs/embedded-stack.md)."""

    def report(restart: Restart) -> None:
        console.print(
            f"[yellow]↻[/] {restart.service} exited with code {restart.exit_code}; started it again"
        )

    supervisor = Supervisor(stack, on_restart=report)
    while True:
        time.sleep(0.5)
        supervisor.check()


def _stop(stack: EmbeddedStack, console: Console, *, failed: bool) -> None:
    pids = [s.process.pid for s in stack.services if s.process is not None and s.process.pid is not None]
    with console.status("stopping"):
        stack.stop()
    left = [pid for pid in pids if pid_alive(pid)]
    if left:
        console.print(f"[red]✗ processes still running after stop: {left}[/]")
    else:
        console.print(f"[green]✓[/] stopped {len(pids)} processes; none left running")
    if failed:
        console.print(f"logs: {stack.workdir}")


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt, like Ctrl-C, and restore the handlers after."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        # Only the first signal interrupts; further ones must not cut the shutdown short.
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _where_table(stack: EmbeddedStack, context: DevContext, *, keep_logs: bool) -> Table:
    table = Table(title="streamjoin dev: where everything runs", title_justify="left")
    table.add_column("what", style="bold", no_wrap=True)
    table.add_column("where", overflow="fold")
    table.add_column("pid", justify="right", no_wrap=True)
    for service in stack.services:
        pid = service.process.pid if service.process is not None else None
        for label, address in service.endpoints().items():
            table.add_row(label, address, str(pid or ""))
    for label, address in context.where:
        table.add_row(label, address, "")
    fate = "kept at exit" if keep_logs else "removed at exit; --keep-logs keeps it"
    table.add_row("logs", f"{stack.workdir} ({fate})", "")
    return table


def stack_environment(stack: EmbeddedStack) -> dict[str, str]:
    """Return the `STREAMJOIN_*` variables that point other commands at `stack`.

    The broker and Redis addresses, and the API token when the control plane runs: a fresh random
    one per run (`EmbeddedApi`), never a default.
    """
    env = stack.settings().as_env()
    names = ("STREAMJOIN_KAFKA_BOOTSTRAP", "STREAMJOIN_REDIS_URL", "STREAMJOIN_SCHEMA_REGISTRY_URL")
    # The registry's: the stack's, else the one the environment names, else none.
    out = {name: env[name] for name in names if name in env}
    for service in stack.services:
        if isinstance(service, EmbeddedApi):
            out["STREAMJOIN_API_TOKEN"] = service.token
    return out


def export_lines(env: Mapping[str, str]) -> list[str]:
    """Return one shell `export NAME=value` line per variable, quoted where the shell needs it.

    >>> export_lines({"STREAMJOIN_REDIS_URL": "redis://127.0.0.1:6379/0", "X": "a b"})
    ['export STREAMJOIN_REDIS_URL=redis://127.0.0.1:6379/0', "export X='a b'"]
    """
    return [f"export {name}={shlex.quote(value)}" for name, value in env.items()]


def print_exports(console: Console, lines: list[str]) -> None:
    """Print `lines` whole, one per line: never wrapped at the terminal's width, so they paste as is."""
    console.print("Point other commands at this stack (copy and paste):")
    for line in lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
