"""Query definitions: the validated, immutable form of what a user registers."""

from streamjoin.query.bounds import pair_bounds
from streamjoin.query.model import (
    FieldRef,
    InputDef,
    ModeDef,
    Predicate,
    QueryDef,
    RangeWindow,
    RowsWindow,
    WithinPair,
)
from streamjoin.query.parse import QueryError, parse_definition, parse_query

__all__ = [
    "FieldRef",
    "InputDef",
    "ModeDef",
    "Predicate",
    "QueryDef",
    "QueryError",
    "RangeWindow",
    "RowsWindow",
    "WithinPair",
    "pair_bounds",
    "parse_definition",
    "parse_query",
]
