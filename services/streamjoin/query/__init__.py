"""Query definitions: the validated, immutable form of what a user registers."""

from streamjoin.query.model import FieldRef, InputDef, ModeDef, Predicate, QueryDef, RangeWindow, RowsWindow
from streamjoin.query.parse import QueryError, parse_query

__all__ = [
    "FieldRef",
    "InputDef",
    "ModeDef",
    "Predicate",
    "QueryDef",
    "QueryError",
    "RangeWindow",
    "RowsWindow",
    "parse_query",
]
