"""`streamjoin topics ...`: create the declared topics on a broker, and list them.

The declaration is `topics/topics.json` (or `--file`, or `$STREAMJOIN_TOPICS_FILE`); the broker is
`--bootstrap`, else `$STREAMJOIN_KAFKA_BOOTSTRAP`, else 127.0.0.1:9092.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from streamjoin.client_security import librdkafka_options
from streamjoin.settings import load_settings
from streamjoin.topics import (
    SLOTS_TOPIC,
    BrokerUnreachableError,
    CatalogError,
    TopicCatalog,
    broker_topics,
    create_topics,
    load_catalog,
)

__all__ = ["create", "list_topics", "register"]

_OUTCOME_STYLE = {"created": "green", "exists": "cyan", "mismatch": "red", "failed": "red"}

Bootstrap = Annotated[
    str | None, typer.Option("--bootstrap", "-b", help="Broker host:port[,host:port] (default: settings).")
]
TopicsFile = Annotated[
    Path | None, typer.Option("--file", "-f", help="The topic declaration (default: topics/topics.json).")
]


def register(app: typer.Typer) -> None:
    """Mount `streamjoin topics ...` on the main command."""
    topics_app = typer.Typer(help="The Kafka topics streamjoin uses (declared in topics/topics.json).")
    topics_app.command("create")(create)
    topics_app.command("list")(list_topics)
    app.add_typer(topics_app, name="topics")


def _load(bootstrap: str | None, file: Path | None) -> tuple[str, dict[str, str], TopicCatalog]:
    """Return the brokers, the admin client's security properties, and the declaration."""
    settings = load_settings(kafka_bootstrap=bootstrap, topics_file=file)
    try:
        # The slots topic has as many partitions as the joiners have slots: one setting decides both.
        catalog = load_catalog(settings.topics_file).with_partitions(SLOTS_TOPIC, settings.joiner_slots)
        return settings.kafka_bootstrap, librdkafka_options(settings), catalog
    except CatalogError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def create(
    bootstrap: Bootstrap = None,
    file: TopicsFile = None,
    replication_factor: Annotated[
        int | None,
        typer.Option(help="Override every topic's replication factor (-1: broker default)."),
    ] = None,
    timeout_ms: Annotated[int, typer.Option(help="Bound on each admin request.")] = 30_000,
) -> None:
    """Create every declared topic that does not exist yet (idempotent).

    Exits 1 if a topic could not be created or exists with another partition count.
    """
    server, security, catalog = _load(bootstrap, file)
    try:
        results = create_topics(
            server,
            catalog,
            replication_factor=replication_factor,
            timeout_ms=timeout_ms,
            client_config=security,
        )
    except BrokerUnreachableError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    table = Table(title=f"topics on {server}", title_justify="left")
    for column in ("topic", "role", "partitions", "result"):
        table.add_column(column)
    for result in results:
        style = _OUTCOME_STYLE[result.outcome]
        detail = f" ({result.message})" if result.message else ""
        partitions = str(result.partitions if result.partitions is not None else result.spec.partitions)
        table.add_row(result.spec.name, result.spec.role, partitions, f"[{style}]{result.outcome}[/]{detail}")
    Console(highlight=False).print(table)
    if not all(result.ok for result in results):
        raise typer.Exit(1)


def list_topics(
    bootstrap: Bootstrap = None,
    file: TopicsFile = None,
    declared_only: Annotated[
        bool, typer.Option("--declared-only", help="Only print the declaration; do not ask a broker.")
    ] = False,
    timeout_ms: Annotated[int, typer.Option(help="Bound on the metadata request.")] = 10_000,
) -> None:
    """List the declared topics and, unless --declared-only, their state on the broker.

    Topics on the broker that are not declared are listed too, marked "undeclared".
    """
    server, security, catalog = _load(bootstrap, file)
    on_broker: dict[str, int] | None = None
    if not declared_only:
        try:
            on_broker = broker_topics(server, timeout_ms=timeout_ms, client_config=security)
        except BrokerUnreachableError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
    title = f"topics declared in {catalog.source}" + ("" if on_broker is None else f", on {server}")
    table = Table(title=title, title_justify="left")
    for column in (
        "topic",
        "role",
        "partitions",
        "config",
        *(["on broker"] if on_broker is not None else []),
    ):
        table.add_column(column, overflow="fold")
    for spec in catalog:
        config = " ".join(f"{k}={v}" for k, v in spec.config.items())
        row = [spec.name, spec.role, str(spec.partitions), config]
        if on_broker is not None:
            actual = on_broker.get(spec.name)
            if actual is None:
                row.append("[yellow]missing[/]")
            elif actual != spec.partitions:
                row.append(f"[red]{actual} partitions[/]")
            else:
                row.append("[green]ok[/]")
        table.add_row(*row)
    if on_broker is not None:
        declared = {spec.name for spec in catalog}
        for name in sorted(set(on_broker) - declared):
            if not name.startswith("__"):
                table.add_row(name, "", str(on_broker[name]), "", "[yellow]undeclared[/]")
    Console(highlight=False).print(table)
