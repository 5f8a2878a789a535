"""`streamjoin dev up`'s summary: the `STREAMJOIN_*` exports print whole, the token is per run."""

from __future__ import annotations

from io import StringIO
from typing import Any

from rich.console import Console

from streamjoin.cli.dev import export_lines, print_exports, stack_environment
from streamjoin.dev.services import EmbeddedApi
from streamjoin.settings import Settings


class _Stack:
    """What `stack_environment` reads of an `EmbeddedStack`: its settings and its services."""

    def __init__(self, *services: Any) -> None:
        self.services = services

    def settings(self) -> Settings:
        return Settings(kafka_bootstrap="127.0.0.1:40123", redis_url="redis://127.0.0.1:45678/0")


def test_exports_print_whole_on_a_narrow_terminal() -> None:
    api = EmbeddedApi({})
    env = stack_environment(_Stack(api))  # type: ignore[arg-type]
    assert env == {
        "STREAMJOIN_KAFKA_BOOTSTRAP": "127.0.0.1:40123",
        "STREAMJOIN_REDIS_URL": "redis://127.0.0.1:45678/0",
        "STREAMJOIN_API_TOKEN": api.token,
    }
    out = StringIO()
    print_exports(Console(file=out, width=30, color_system=None), export_lines(env))
    assert out.getvalue().splitlines()[-3:] == [
        "export STREAMJOIN_KAFKA_BOOTSTRAP=127.0.0.1:40123",
        "export STREAMJOIN_REDIS_URL=redis://127.0.0.1:45678/0",
        f"export STREAMJOIN_API_TOKEN={api.token}",
    ]


def test_the_token_is_fresh_per_run_and_the_one_the_api_gets() -> None:
    first, second = EmbeddedApi({}), EmbeddedApi({})
    assert first.token != second.token and len(first.token) >= 20
    assert first._env["STREAMJOIN_API_TOKEN"] == first.token
    assert "STREAMJOIN_API_TOKEN" not in stack_environment(_Stack())  # type: ignore[arg-type]
