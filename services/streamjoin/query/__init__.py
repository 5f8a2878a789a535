"""Query definitions: the validated, immutable form of what a user registers."""

from streamjoin.query.bounds import pair_bounds
from streamjoin.query.engine_support import UnsupportedQueryError
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
    "UnsupportedQueryError",
    "WithinPair",
    "pair_bounds",
    "parse_definition",
    "parse_query",
]
