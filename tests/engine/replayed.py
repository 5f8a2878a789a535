"""Run `streamjoin.replay` in memory and read its results as the oracle's keys."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from streamjoin.query import QueryDef
from streamjoin.replay import replay
from streamjoin.testing import ResultKey

__all__ = ["replayed"]


def replayed(query: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]]) -> Counter[ResultKey]:
    """Return what `replay` of `query` over `lines` (stream, record) outputs, as (partition, offset) keys.

    Replay writes each result's id, `topic:partition:offset` of each component in query order
    joined by `|`; replay's offset is the line's position among its stream's lines, as the oracle's.
    """
    out = io.StringIO()
    replay(query, [json.dumps({"stream": s, "record": r}) + "\n" for s, r in lines], out, output_format="ids")
    keys: Counter[ResultKey] = Counter()
    for result_id in out.getvalue().split():
        components = (part.rsplit(":", 2) for part in result_id.split("|"))
        keys[tuple((int(partition), int(offset)) for _, partition, offset in components)] += 1
    return keys
