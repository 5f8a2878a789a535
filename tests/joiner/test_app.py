"""The Faust app's health hook: a crashed conductor or consumer makes the worker not ready."""

from __future__ import annotations

import asyncio
from pathlib import Path

from streamjoin.joiner.group.app import crashed_services, make_app
from streamjoin.kafka import KafkaClients


def test_crashed_conductor_is_reported(tmp_path: Path) -> None:
    async def run() -> tuple[list[str], list[str]]:
        app = make_app("g-test", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path))
        before = crashed_services(app)
        await app.topics.crash(TypeError("You should provide either `topics` or `pattern`"))
        return before, crashed_services(app)

    before, after = asyncio.run(run())
    assert before == []
    assert after == ["conductor: TypeError: You should provide either `topics` or `pattern`"]
