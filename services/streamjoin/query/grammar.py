"""Every closed set of names a query may write, each declared once (docs/queries.md).

The names of values (algorithms, modes, formats, policies, ...) and the fields of each JSON object.

Each concept is a `Literal` type and the tuple of its names, derived from it with `typing.get_args`.
Everything else reads them: the query model types its fields by the `Literal`s, the JSON parser and
the CQL/SQL parsers check against the tuples and list them in their errors ("must be one of ..."), the
control plane's pydantic schemas use the same `Literal`s (so the OpenAPI enums are these names), and
the engine's registries are keyed by them (`tests/query/test_grammar.py` and
`tests/api/test_grammar_schema.py` check that none of them drifts, docs/queries.md's tables included).

A new name is one edit here, plus its implementation where the concept is run (docs/engine.md,
"Adding a variant").

>>> ALGORITHM_NAMES, EXPIRATION_MODES
(('hash', 'nlj'), ('eager', 'lazy', 'probe', 'probe_insert', 'probe_all'))
>>> one_of(ALGORITHM_NAMES), one_of(OUTPUT_FORMATS)
('"hash" or "nlj"', '"envelope", "flat" or "avro"')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

__all__ = [
    "ALGORITHM_NAMES",
    "AUTO_ORDER",
    "COMBINE_NAMES",
    "COMPARISONS",
    "EVALUATION_MODES",
    "EXPIRATION_MODES",
    "EXPIRATION_SCOPES",
    "INPUT_FIELDS",
    "INPUT_FORMATS",
    "OUTPUT_FIELDS",
    "OUTPUT_FORMATS",
    "POLICY_NAMES",
    "QUERY_FIELDS",
    "SHEDDING_FIELDS",
    "START_NAMES",
    "WINDOW_FIELDS",
    "WINDOW_KINDS",
    "Algorithm",
    "AutoOrder",
    "CombineName",
    "Comparison",
    "ExpirationMode",
    "ExpirationScope",
    "InputFormat",
    "Mode",
    "OutputFormat",
    "PolicyName",
    "StartName",
    "WindowKind",
    "one_of",
]

Algorithm: TypeAlias = Literal["hash", "nlj"]
"""The join algorithm (`algorithm`): hash join or nested loops (Golab & Özsu)."""
ALGORITHM_NAMES: tuple[Algorithm, ...] = get_args(Algorithm)

Mode: TypeAlias = Literal["eager", "lazy"]
"""An evaluation mode (`evaluation.mode`, Golab & Özsu); also the expiration modes every engine runs."""
EVALUATION_MODES: tuple[Mode, ...] = get_args(Mode)

ExpirationScope: TypeAlias = Literal["probe", "probe_insert", "probe_all"]
"""Kostowski & Claypool's invalidation scopes: expiration modes only (docs/windows.md)."""
EXPIRATION_SCOPES: tuple[ExpirationScope, ...] = get_args(ExpirationScope)

ExpirationMode: TypeAlias = Literal[Mode, ExpirationScope]
"""An expiration mode (`expiration.mode`): an evaluation mode or an invalidation scope."""
EXPIRATION_MODES: tuple[ExpirationMode, ...] = get_args(ExpirationMode)

WindowKind: TypeAlias = Literal["range", "rows"]
"""The field that makes a window (`{"range": T}`, `{"rows": N}`): time-based or count-based."""
WINDOW_KINDS: tuple[WindowKind, ...] = get_args(WindowKind)

Comparison: TypeAlias = Literal["=", "!=", "<", "<=", ">", ">="]
"""The operator of a `where` predicate."""
COMPARISONS: tuple[Comparison, ...] = get_args(Comparison)

StartName: TypeAlias = Literal["latest", "earliest"]
"""A named `start` position (the other positions are timestamps)."""
START_NAMES: tuple[StartName, ...] = get_args(StartName)

AutoOrder: TypeAlias = Literal["auto"]
"""The `order` that lets the planner choose (the other orders are lists of the inputs)."""
AUTO_ORDER: AutoOrder = "auto"

InputFormat: TypeAlias = Literal["json", "avro"]
"""How an input topic's record values are encoded (docs/formats.md)."""
INPUT_FORMATS: tuple[InputFormat, ...] = get_args(InputFormat)

OutputFormat: TypeAlias = Literal["envelope", "flat", "avro"]
"""The output records' shape (`output.format`, docs/formats.md)."""
OUTPUT_FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)

PolicyName: TypeAlias = Literal["random", "frequency", "simp", "simpprob", "dimpprob", "dgl"]
"""A load-shedding policy (`shedding.policy`, docs/shedding.md)."""
POLICY_NAMES: tuple[PolicyName, ...] = get_args(PolicyName)

CombineName: TypeAlias = Literal["min", "max", "sum", "product", "avg"]
"""How a result's importance combines its members' (`shedding.combine`)."""
COMBINE_NAMES: tuple[CombineName, ...] = get_args(CombineName)

# The fields of each JSON object of a query: any other is an error. The API's schemas have the same
# properties (`tests/api/test_grammar_schema.py`).
QUERY_FIELDS: frozenset[str] = frozenset(
    {
        "name",
        "inputs",
        "where",
        "output",
        "evaluation",
        "expiration",
        "algorithm",
        "order",
        "lateness",
        "select",
        "start",
        "dead_letter",
        "within",
        "shedding",
        "filter",
        "columns",
    }
)
INPUT_FIELDS: frozenset[str] = frozenset({"stream", "topic", "timestamp", "window", "key", "format"})
WINDOW_FIELDS: frozenset[str] = frozenset({*WINDOW_KINDS, "partition_by", "strict"})
OUTPUT_FIELDS: frozenset[str] = frozenset({"topic", "format", "schema"})
SHEDDING_FIELDS: frozenset[str] = frozenset({"memory", "policy", "importance", "combine", "seed"})


def one_of(names: Sequence[str], *others: str) -> str:
    """Return `names` quoted, then `others` as written, as the end of "must be ...".

    >>> one_of(["a"]), one_of(["a", "b", "c"]), one_of(START_NAMES, "a timestamp")
    ('"a"', '"a", "b" or "c"', '"latest", "earliest" or a timestamp')
    """
    words = [f'"{name}"' for name in names] + list(others)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
