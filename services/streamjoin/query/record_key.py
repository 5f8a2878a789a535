"""The Kafka key of a record streamjoin writes: the JSON of one field's value.

An output record's key (`streamjoin.engine.output`, the first join field) and a re-keyed record's
key (`streamjoin.query.partitioning`) are written alike, so Kafka's default partitioner places a
value in the same partition whichever of them wrote it.

>>> json_key(7), json_key("x"), json_key(None), json_key(2.5)
(b'7', b'"x"', b'null', b'2.5')
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_key"]


def json_key(value: Any) -> bytes:
    """Return `value` as the JSON of a record's Kafka key (ints without `json.dumps`)."""
    return b"%d" % value if type(value) is int else json.dumps(value).encode()
