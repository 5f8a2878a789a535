"""Parse and validate the query JSON of docs/queries.md, "The query JSON" into a `QueryDef`.

The input is data: it is walked field by field, never evaluated. Every problem raises a
`QueryError` whose `field` names the offending place (`inputs[1].window.range`), so the control
plane can answer with a 422 that says what is wrong and the replay CLI with a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard, cast

from streamjoin.names import TOPIC_MAX
from streamjoin.query.bounds import unbounded_input
from streamjoin.query.columns import parse_columns
from streamjoin.query.errors import QueryError
from streamjoin.query.expr import parse_expr
from streamjoin.query.grammar import (
    ALGORITHM_NAMES,
    AUTO_ORDER,
    COMPARISONS,
    EVALUATION_MODES,
    EXPIRATION_MODES,
    EXPIRATION_SCOPES,
    INPUT_FIELDS,
    QUERY_FIELDS,
    START_NAMES,
    WINDOW_FIELDS,
    WINDOW_KINDS,
    Algorithm,
    AutoOrder,
    Comparison,
    ExpirationMode,
    one_of,
)
from streamjoin.query.graph import validate_join_graph
from streamjoin.query.model import (
    FieldRef,
    InputDef,
    ModeDef,
    Operand,
    Predicate,
    QueryDef,
    RangeWindow,
    RowsWindow,
    StartPosition,
    WindowDef,
    WithinPair,
)
from streamjoin.query.names import parse_field, parse_topic
from streamjoin.query.output import parse_input_format, parse_output_format
from streamjoin.query.shedding import SheddingDef, parse_shedding

__all__ = [
    "QueryError",
    "parse_definition",
    "parse_expiration",
    "parse_mode",
    "parse_operand",
    "parse_key",
    "parse_order",
    "parse_query",
    "validate_join_graph",
]


MAX_SPAN = 10**15
"""The largest window range, `every` and `lateness` accepted (in the query's unit: 31,000 years of ms).
A larger one could never expire anything, and keeps a query positioning for ever."""

MAX_ROWS = 10**9
"""The largest count window accepted."""

MAX_START = 2**53
"""The largest `start` timestamp: the record reader's timestamp limit (exact as a double)."""


def _is_number(value: object) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    # math.isfinite raises OverflowError on an int beyond a double (a 4,000-digit window)
    return math.isfinite(value) if isinstance(value, float) else True


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > TOPIC_MAX:
        raise QueryError(where, f"must be a non-empty string of at most {TOPIC_MAX} characters")
    return value


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise QueryError(where, "must be a JSON object")
    return cast(Mapping[str, Any], value)


def _window(raw: object, where: str) -> WindowDef:
    spec = _mapping(raw, where)
    unknown = set(spec) - WINDOW_FIELDS
    if unknown:
        raise QueryError(where, f"unknown window field(s) {sorted(unknown)}")
    if sum(kind in spec for kind in WINDOW_KINDS) != 1:
        raise QueryError(where, f"must have exactly one of {one_of(WINDOW_KINDS)}")
    if "range" in spec:
        if "partition_by" in spec:
            raise QueryError(f"{where}.partition_by", 'only a "rows" window can be partitioned')
        size = spec["range"]
        if not _is_number(size) or size <= 0 or size > MAX_SPAN:
            raise QueryError(f"{where}.range", f"must be a number > 0 and <= {MAX_SPAN:.0e}")
        strict = spec.get("strict", False)
        if not isinstance(strict, bool):
            raise QueryError(f"{where}.strict", "must be true or false")
        return RangeWindow(range=size, strict=strict)
    if "strict" in spec:
        raise QueryError(f"{where}.strict", 'only a "range" window can be strict')
    rows = spec["rows"]
    if isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0 or rows > MAX_ROWS:
        raise QueryError(f"{where}.rows", f"must be an integer > 0 and <= {MAX_ROWS:.0e}")
    partition_by = spec.get("partition_by")
    if partition_by is not None:
        partition_by = parse_field(partition_by, f"{where}.partition_by")
    return RowsWindow(rows=rows, partition_by=partition_by)


def _inputs(raw: object) -> tuple[InputDef, ...]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise QueryError("inputs", "must be a list of at least 2 inputs")
    inputs: list[InputDef] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"inputs[{i}]"
        spec = _mapping(item, where)
        unknown = set(spec) - INPUT_FIELDS
        if unknown:
            raise QueryError(where, f"unknown field(s) {sorted(unknown)}")
        stream = _name(spec.get("stream"), f"{where}.stream")
        if "." in stream:
            raise QueryError(f"{where}.stream", "must not contain '.'")
        if stream in seen:
            raise QueryError(f"{where}.stream", f"duplicate input stream {stream!r}")
        seen.add(stream)
        topic = parse_topic(spec.get("topic", stream), f"{where}.topic")
        timestamp = spec.get("timestamp")
        if timestamp is not None:
            timestamp = parse_field(timestamp, f"{where}.timestamp")
        window = spec.get("window")  # None: bounded by `within` pairs only (checked by `_within`)
        window = None if window is None else _window(window, f"{where}.window")
        key = None if spec.get("key") is None else parse_key(spec["key"], stream, f"{where}.key")
        inputs.append(InputDef(stream, topic, timestamp, window, key, parse_input_format(spec, where)))
    return tuple(inputs)


def parse_key(raw: object, stream: str, where: str) -> str:
    """Return the key field of input `stream`: a plain field name, not `"stream.field"` or an expression."""
    key = parse_field(raw, where)
    if key.startswith(f"{stream}."):
        raise QueryError(
            where, f"must be a plain field name of the input: {key.partition('.')[2]!r}, not {key!r}"
        )
    return key


def parse_operand(raw: object, streams: frozenset[str], where: str) -> Operand:
    """Return a `FieldRef` for `"stream.field"` over a known stream, else the JSON literal.

    A string naming an unknown stream is an error, not a literal: quote literals that contain a
    dot by making them non-strings or by not prefixing them with a stream name.
    """
    if isinstance(raw, str) and "." in raw:
        stream, _, name = raw.partition(".")
        if stream in streams and name:
            return FieldRef(stream, parse_field(name, where))
        if stream and name and stream.isidentifier():
            raise QueryError(where, f"unknown stream {stream!r} in {raw!r}")
    if raw is None or isinstance(raw, str | bool) or _is_number(raw):
        return cast(Operand, raw)
    raise QueryError(where, 'must be a "stream.field" reference or a JSON scalar')


def _where(raw: object, streams: frozenset[str]) -> tuple[Predicate, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise QueryError("where", "must be a list of [left, op, right] triples")
    predicates: list[Predicate] = []
    for i, item in enumerate(raw):
        where = f"where[{i}]"
        if not isinstance(item, list) or len(item) != 3:
            raise QueryError(where, "must be a [left, op, right] triple")
        left, op, right = item
        if op not in COMPARISONS:
            raise QueryError(f"{where}[1]", f"unknown operator {op!r}; use one of {sorted(COMPARISONS)}")
        pred = Predicate(
            parse_operand(left, streams, f"{where}[0]"),
            cast(Comparison, op),
            parse_operand(right, streams, f"{where}[2]"),
        )
        if not pred.streams:
            raise QueryError(where, "must mention at least one input field")
        predicates.append(pred)
    return tuple(predicates)


def _mode(raw: object, where: str) -> ModeDef:
    if raw is None:
        return ModeDef()
    spec = _mapping(raw, where)
    mode = spec.get("mode", "eager")
    if mode == "eager":
        if set(spec) - {"mode"}:
            raise QueryError(where, "eager mode takes no other field")
        return ModeDef("eager")
    if mode != "lazy":
        raise QueryError(f"{where}.mode", f"must be {one_of(EVALUATION_MODES)}")
    every = spec.get("every")
    if not _is_number(every) or every <= 0 or every > MAX_SPAN:
        raise QueryError(f"{where}.every", f"lazy mode needs a number every > 0 and <= {MAX_SPAN:.0e}")
    return ModeDef("lazy", every)


def _expiration(raw: object) -> ModeDef:
    mode = raw.get("mode", "eager") if isinstance(raw, Mapping) else "eager"
    if mode in EXPIRATION_SCOPES:
        if set(cast(Mapping[str, Any], raw)) - {"mode"}:
            raise QueryError("expiration", f"mode {mode!r} takes no other field")
        return ModeDef(cast(ExpirationMode, mode))
    if mode not in EVALUATION_MODES:
        raise QueryError("expiration.mode", f"must be {one_of(EXPIRATION_MODES)}")
    return _mode(raw, "expiration")


def _within(raw: object, inputs: tuple[InputDef, ...]) -> tuple[WithinPair, ...]:
    """Parse the `within` pairs, then check that no input's records could be needed forever."""
    names = [i.stream for i in inputs]
    pairs: list[WithinPair] = []
    seen: dict[frozenset[str], int] = {}
    if raw is not None and not isinstance(raw, list):
        raise QueryError("within", "must be a list of [stream, stream, bound] triples")
    for i, item in enumerate(raw or []):
        where = f"within[{i}]"
        if not isinstance(item, list) or len(item) != 3:
            raise QueryError(where, "must be a [stream, stream, bound] triple")
        for side in (0, 1):
            if item[side] not in names:
                raise QueryError(f"{where}[{side}]", f"unknown input {item[side]!r}; the inputs are {names}")
        left, right, bound = item
        if left == right:
            raise QueryError(where, f"bounds input {left!r} against itself; name two different inputs")
        if not _is_number(bound) or bound <= 0:
            raise QueryError(f"{where}[2]", "must be a number > 0")
        key = frozenset((left, right))
        if key in seen:
            raise QueryError(where, f"the pair ({left}, {right}) is already bounded by within[{seen[key]}]")
        seen[key] = i
        pairs.append(WithinPair(left, right, bound))
    problem = unbounded_input(inputs, pairs)
    if problem is not None:
        index, missing = problem
        raise QueryError(
            f"inputs[{index}].window",
            f"input {names[index]!r} has no window and nothing bounds it against {missing}, so its records "
            'could be needed forever: give it a window, or "within" pairs that connect it (directly or '
            "through other inputs) to every other input",
        )
    return tuple(pairs)


def _order(raw: object, names: tuple[str, ...]) -> tuple[str, ...] | AutoOrder:
    if raw is None or raw == AUTO_ORDER:
        return AUTO_ORDER
    if not isinstance(raw, list) or sorted(map(str, raw)) != sorted(names) or len(raw) != len(names):
        permutation = f"a permutation of the input streams {list(names)}"
        raise QueryError("order", f"must be {one_of([AUTO_ORDER], permutation)}")
    return tuple(raw)


def _select(raw: object, streams: frozenset[str]) -> tuple[FieldRef, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise QueryError("select", 'must be a non-empty list of "stream.field"')
    refs = []
    for i, item in enumerate(raw):
        ref = parse_operand(item, streams, f"select[{i}]")
        if not isinstance(ref, FieldRef):
            raise QueryError(f"select[{i}]", 'must be "stream.field" over an input stream')
        refs.append(ref)
    return tuple(refs)


def _start(raw: object) -> StartPosition:
    if raw is None:
        return "latest"
    if raw in START_NAMES or (_is_number(raw) and 0 <= raw <= MAX_START):
        return raw
    raise QueryError(
        "start", f"must be {one_of(START_NAMES, f'a timestamp >= 0 and <= 2**53 ({MAX_START})')}"
    )


def parse_query(raw: object) -> QueryDef:
    """Validate the query JSON (already decoded) and return its `QueryDef`.

    Raises:
        QueryError: the query is invalid.
    """
    return parse_definition(raw)


def parse_definition(raw: object) -> QueryDef:
    """Validate the query JSON (already decoded) and return its `QueryDef`, whatever engine runs it."""
    spec = _mapping(raw, "query")
    unknown = set(spec) - QUERY_FIELDS
    if unknown:
        raise QueryError("query", f"unknown field(s) {sorted(unknown)}")
    name = _name(spec.get("name"), "name")
    inputs = _inputs(spec.get("inputs"))
    names = tuple(i.stream for i in inputs)
    streams = frozenset(names)
    where = _where(spec.get("where"), streams)
    validate_join_graph(inputs, where)
    within = _within(spec.get("within"), inputs)
    output = _mapping(spec.get("output"), "output")
    output_topic = parse_topic(output.get("topic"), "output.topic")
    output_format, output_schema = parse_output_format(output)
    algorithm = spec.get("algorithm", "hash")
    if algorithm not in ALGORITHM_NAMES:
        raise QueryError("algorithm", f"must be {one_of(ALGORITHM_NAMES)}")
    lateness = spec.get("lateness", 0)
    if not _is_number(lateness) or lateness < 0 or lateness > MAX_SPAN:
        raise QueryError("lateness", f"must be a number >= 0 and <= {MAX_SPAN:.0e}")
    if spec.get("filter") is not None and spec.get("shedding") is not None:
        raise QueryError("filter", "a filter expression cannot be combined with shedding yet")
    dead_letter = spec.get("dead_letter")
    if dead_letter is not None:
        dead_letter = parse_topic(_mapping(dead_letter, "dead_letter").get("topic"), "dead_letter.topic")
    return QueryDef(
        name=name,
        inputs=inputs,
        where=where,
        output_topic=output_topic,
        evaluation=_mode(spec.get("evaluation"), "evaluation"),
        expiration=_expiration(spec.get("expiration")),
        algorithm=cast(Algorithm, algorithm),
        order=_order(spec.get("order"), names),
        lateness=lateness,
        select=_select(spec.get("select"), streams),
        start=_start(spec.get("start")),
        dead_letter_topic=dead_letter,
        within=within,
        shedding=_shedding(spec.get("shedding"), inputs),
        filter=None if spec.get("filter") is None else parse_expr(spec["filter"], streams, "filter"),
        output_format=output_format,
        output_schema=output_schema,
        columns=parse_columns(spec.get("columns"), streams, select=spec.get("select")),
    )


def _shedding(raw: object, inputs: Sequence[InputDef]) -> SheddingDef | None:
    shedding = parse_shedding(raw, inputs=len(inputs))
    if shedding is not None and any(i.window is None for i in inputs):
        # A window's share of the budget needs a window: one bounded by `within` pairs alone holds
        # records for as long as another input's records may still need them.
        raise QueryError("shedding", "needs a window (range or rows) on every input")
    return shedding


def parse_mode(raw: object, where: str) -> ModeDef:
    """Parse an evaluation or expiration mode (`{"mode": "lazy", "every": 10}`); `where` names the field.

    >>> parse_mode({"mode": "lazy", "every": 10}, "evaluation")
    ModeDef(mode='lazy', every=10)
    """
    return _mode(raw, where)


def parse_expiration(raw: object) -> ModeDef:
    """Parse an expiration mode: an evaluation mode, or an invalidation scope (`{"mode": "probe"}`).

    >>> parse_expiration({"mode": "probe_insert"})
    ModeDef(mode='probe_insert', every=None)
    """
    return _expiration(raw)


def parse_order(raw: object, names: tuple[str, ...]) -> tuple[str, ...] | AutoOrder:
    """Parse a join order: `"auto"` (or None) or a permutation of the input stream `names`."""
    return _order(raw, names)
