"""The docs' tables of names list exactly what the query grammar declares (`streamjoin.query.grammar`).

A name added to the grammar without its line in the reference, or a name the docs still list after
it was removed, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamjoin.query import grammar as g

DOCS = Path(__file__).resolve().parents[2] / "docs"
_QUOTED = r'"(\w+)"'
_MODE = r'"mode": "(\w+)"'
_CODE = r"`(\w+)`"


def _row_values(doc: str, field: str) -> str:
    """Return the second cell of the table row whose first cell is `field` (in backticks)."""
    for line in (DOCS / doc).read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == f"`{field}`":
            return cells[1]
    raise AssertionError(f"{doc} has no table row for `{field}`")


@pytest.mark.parametrize(
    ("doc", "field", "pattern", "declared"),
    [
        ("queries.md", "algorithm", _QUOTED, g.ALGORITHM_NAMES),
        ("queries.md", "evaluation", _MODE, g.EVALUATION_MODES),
        ("queries.md", "expiration", _MODE, g.EXPIRATION_MODES),
        ("queries.md", "start", _QUOTED, g.START_NAMES),
        ("queries.md", "order", _QUOTED, (g.AUTO_ORDER,)),
        ("queries.md", "output", r'`"(\w+)"` \(', g.OUTPUT_FORMATS),
        ("shedding.md", "policy", _CODE, g.POLICY_NAMES),
        ("shedding.md", "combine", _CODE, g.COMBINE_NAMES),
    ],
)
def test_a_table_row_lists_the_declared_names(
    doc: str, field: str, pattern: str, declared: tuple[str, ...]
) -> None:
    assert re.findall(pattern, _row_values(doc, field)) == list(declared)


def test_windows_md_has_a_row_per_expiration_mode() -> None:
    text = (DOCS / "windows.md").read_text()
    table = text[text.index("| mode | cleaned on each arrival |") :].split("\n\n")[0]
    assert re.findall(r"^\| `(\w+)`", table, re.MULTILINE) == list(g.EXPIRATION_MODES)
