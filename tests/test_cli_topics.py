"""`streamjoin topics`: the slots topic is declared with the joiners' slot count, whatever the file
says, so that the topics job and the workers agree (docs/joiner.md, "Slots")."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from streamjoin.cli.main import app
from streamjoin.topics import SLOTS_TOPIC, load_catalog

runner = CliRunner()


def _declared_partitions(output: str, topic: str) -> int:
    row = next(line for line in output.splitlines() if topic in line)
    return int(next(cell for cell in row.replace("│", "|").split("|") if cell.strip().isdigit()).strip())


@pytest.mark.parametrize("slots", [12, 64])
def test_the_slots_topic_is_declared_with_the_joiners_slot_count(
    slots: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMJOIN_JOINER_SLOTS", str(slots))
    result = runner.invoke(app, ["topics", "list", "--declared-only"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert _declared_partitions(result.output, SLOTS_TOPIC) == slots
    assert load_catalog()[SLOTS_TOPIC].partitions == 64  # the file's own count is not what decides
