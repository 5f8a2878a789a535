"""Names in a query, checked by the rules of `streamjoin.names`; a bad one is a `QueryError` at its field.

>>> parse_field("src", "where[0][0]")
'src'
>>> try:
...     parse_topic("..", "output.topic")
... except QueryError as exc:
...     print(exc.field)
output.topic
"""

from __future__ import annotations

from streamjoin.names import FIELD_MAX, check_field, check_topic
from streamjoin.query.errors import QueryError

__all__ = ["parse_field", "parse_topic"]


def parse_topic(value: object, where: str) -> str:
    """Return a Kafka topic name (`streamjoin.names.check_topic`); raise `QueryError` at `where`."""
    if not isinstance(value, str):
        raise QueryError(where, "must be a Kafka topic name (a string)")
    try:
        return check_topic(value)
    except ValueError as exc:
        raise QueryError(where, str(exc)) from None


def parse_field(value: object, where: str) -> str:
    """Return a record field's name (`streamjoin.names.check_field`); raise `QueryError` at `where`."""
    if not isinstance(value, str):
        raise QueryError(
            where, f"must be the name of a record field: a non-empty string of at most {FIELD_MAX} characters"
        )
    try:
        return check_field(value)
    except ValueError as exc:
        raise QueryError(where, str(exc)) from None
