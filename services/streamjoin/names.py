"""The names a user gives, each rule declared once: Kafka topics, streams, queries and record fields.

The API's request schemas (`streamjoin.api.schemas.common`), the query parser (`streamjoin.query`)
and the topic catalog (`streamjoin.topics.catalog`) check names here, so what one accepts the others
accept (docs/registry.md, "Names"). Only the standard library: every layer may import it.

>>> check_topic("orders.v1")
'orders.v1'
>>> check_topic("..")
Traceback (most recent call last):
...
ValueError: '..' is not a legal Kafka topic name: Kafka refuses "." and ".."
>>> check_field("x" * 10_000)
Traceback (most recent call last):
...
ValueError: the name of a record field has at most 255 characters; 'xxxxxxxxxxxxxxxxxxxxxxxx...' has 10000
"""

from __future__ import annotations

import re

__all__ = [
    "FIELD_MAX",
    "QUERY_PATTERN",
    "STREAM_PATTERN",
    "TOPIC_MAX",
    "TOPIC_PATTERN",
    "check_field",
    "check_topic",
]

TOPIC_MAX = 249
"""Kafka's longest topic name."""
TOPIC_PATTERN = rf"^[a-zA-Z0-9._-]{{1,{TOPIC_MAX}}}$"
"""A topic's characters and length, as Kafka's `Topic.validate` has them (`check_topic` also refuses
`.` and `..`, which the pattern alone allows)."""
STREAM_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
"""A stream name: a CQL identifier of at most 64 characters (never a `.`: `stream.field` is a field)."""
QUERY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
"""A query name: no `:`, `/` or glob characters, so the registry's keys stay unambiguous."""
FIELD_MAX = 255
"""The longest field name of a record (a timestamp, key or schema field, one step of a field path)."""

_TOPIC = re.compile(TOPIC_PATTERN)
_SHOWN = 24


def check_topic(name: str) -> str:
    """Return `name` if Kafka accepts it as a topic name; raise `ValueError` saying why not."""
    if not _TOPIC.fullmatch(name):
        raise ValueError(
            f"{_shown(name)} is not a legal Kafka topic name: 1 to {TOPIC_MAX} characters of "
            "a-z, A-Z, 0-9, '.', '_' and '-'"
        )
    if name in (".", ".."):
        raise ValueError(f'{name!r} is not a legal Kafka topic name: Kafka refuses "." and ".."')
    return name


def check_field(name: str) -> str:
    """Return `name` if it can name a field of a record; raise `ValueError` saying why not."""
    if not name:
        raise ValueError(
            f"the name of a record field is a non-empty string of at most {FIELD_MAX} characters"
        )
    if len(name) > FIELD_MAX:
        raise ValueError(
            f"the name of a record field has at most {FIELD_MAX} characters; {_shown(name)} has {len(name)}"
        )
    return name


def _shown(name: str) -> str:
    """Return `name` quoted, cut short: an error must not echo 10,000 characters back."""
    return repr(name) if len(name) <= _SHOWN else repr(name[:_SHOWN])[:-1] + "...'"
