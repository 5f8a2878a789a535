"""A registered query: one parsed `QueryDef` and its typed controls, each with one JSON form.

`QueryRecord` is the one form of a query that crosses the registry (docs/registry.md, "A query's
trip"). The control plane parses a query once (`streamjoin.query.parse_query`) into a record whose
JSON (`to_json`: the definition as `streamjoin.query.dump.dump_query` spells it) is made once and
written, the same string, to Redis and to the registry's log; a reader parses that string once
(`from_json`), and the record keeps the string it was read from, so nothing dumps it again. The
controls (STREAM's writable Control-Table attributes) are a `QueryControls` beside it; what a joiner
runs is `record.effective()`, the definition with the controls applied.

>>> from streamjoin.query import parse_query
>>> q = parse_query({"name": "q", "inputs": [{"stream": "a", "window": {"range": 5}},
...     {"stream": "b", "window": {"rows": 2}}], "where": [["a.k", "=", "b.k"]], "output": {"topic": "o"}})
>>> c = QueryControls.of(q).with_changes({"evaluation": {"mode": "lazy", "every": 10}, "order": ["b", "a"]})
>>> c.apply(q).evaluation, c.apply(q).order
(ModeDef(mode='lazy', every=10), ('b', 'a'))
>>> QueryControls.from_hash(c.to_hash()) == c
True
>>> r = QueryRecord.of(q, at=1.5)
>>> read = QueryRecord.from_json("q", r.to_json(), c)
>>> read.query == q, read.to_json() == r.to_json(), read.effective().order
(True, True, ('b', 'a'))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from streamjoin.query import ModeDef, QueryDef, QueryError, parse_query
from streamjoin.query.dump import dump_mode, dump_query
from streamjoin.query.parse import parse_expiration, parse_mode, parse_order
from streamjoin.registry._json import dumps, json_object

__all__ = ["CONTROL_ATTRIBUTES", "Order", "QueryControls", "QueryRecord", "writable_controls"]

Order: TypeAlias = Literal["auto"] | tuple[str, ...]

CONTROL_ATTRIBUTES: tuple[str, ...] = ("evaluation", "expiration", "order", "paused", "shedding_memory")
"""The writable Control-Table attributes of a query, the fields of `streamjoin:control:{query}`."""


def writable_controls(query: QueryDef) -> list[str]:
    """Return the control attributes `query` accepts (`shedding_memory` only with `shedding`)."""
    return [a for a in CONTROL_ATTRIBUTES if a != "shedding_memory" or query.shedding is not None]


def _paused(value: object) -> bool:
    if not isinstance(value, bool):
        raise QueryError("paused", f"must be true or false, not {value!r}")
    return value


def _memory(value: object) -> int | None:
    if value is None:  # the query's own budget
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QueryError("shedding_memory", f"must be an integer >= 1 (records), not {value!r}")
    return value


def _loose_order(value: object) -> Order:
    """Read a stored order without the query's stream names (checked again by `apply`)."""
    if value is None or value == "auto":
        return "auto"
    if isinstance(value, list | tuple) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise QueryError("order", f'must be "auto" or a list of stream names, not {value!r}')


@dataclass(frozen=True, slots=True)
class QueryControls:
    """The writable Control-Table attributes of one query (STREAM's CT controls), typed and frozen."""

    evaluation: ModeDef = field(default_factory=ModeDef)
    expiration: ModeDef = field(default_factory=ModeDef)
    order: Order = "auto"
    paused: bool = False
    shedding_memory: int | None = None
    """The `shedding` budget in force (records over every window); None: the query's own."""

    @classmethod
    def of(cls, query: QueryDef, *, paused: bool = False) -> QueryControls:
        """Return the controls a newly registered `query` starts with: its own modes, order and budget."""
        memory = query.shedding.memory if query.shedding is not None else None
        return cls(query.evaluation, query.expiration, query.order, paused, memory)

    def apply(self, query: QueryDef) -> QueryDef:
        """Return `query` with these controls' evaluation, expiration, order and shedding budget.

        Raises:
            QueryError: the order is not a permutation of the query's input streams (field `order`);
                a shedding budget for a query without `shedding`, or below one record per window
                (field `shedding_memory`).
        """
        order = parse_order(self.order if self.order == "auto" else list(self.order), query.stream_names)
        shedding = query.shedding
        if self.shedding_memory is not None:
            if shedding is None:
                raise QueryError("shedding_memory", f"query {query.name!r} has no `shedding` to budget")
            if self.shedding_memory < len(query.inputs):
                raise QueryError("shedding_memory", f"must be >= {len(query.inputs)} (one record per window)")
            shedding = replace(shedding, memory=self.shedding_memory)
        return replace(
            query, evaluation=self.evaluation, expiration=self.expiration, order=order, shedding=shedding
        )

    def with_changes(self, changes: Mapping[str, Any]) -> QueryControls:
        """Return a copy with `changes` (attribute to its JSON value) applied.

        Raises:
            ValueError: an attribute that is not writable.
            QueryError: a value that is not valid (its `field` names the attribute).
        """
        unknown = set(changes) - set(CONTROL_ATTRIBUTES)
        if unknown:
            raise ValueError(f"not writable control attribute(s): {sorted(unknown)}")
        c = changes
        return QueryControls(
            evaluation=parse_mode(c["evaluation"], "evaluation") if "evaluation" in c else self.evaluation,
            expiration=parse_expiration(c["expiration"]) if "expiration" in c else self.expiration,
            order=_loose_order(c["order"]) if "order" in c else self.order,
            paused=_paused(c["paused"]) if "paused" in c else self.paused,
            shedding_memory=_memory(c["shedding_memory"]) if "shedding_memory" in c else self.shedding_memory,
        )

    def to_hash(self) -> dict[str, str]:
        """Return the fields of `streamjoin:control:{query}`: attribute to its JSON."""
        fields = {**self.as_json(), "shedding_memory": self.shedding_memory}  # null: the query's own
        return {name: dumps(value) for name, value in fields.items()}

    @classmethod
    def from_hash(cls, fields: Mapping[str, str]) -> QueryControls:
        """Build the controls from the stored hash; a missing attribute keeps its default.

        Fields that are no control attribute (such as the removed `memory_budget_bytes` of older
        registries) are ignored.
        """
        return cls().with_changes({k: json.loads(fields[k]) for k in CONTROL_ATTRIBUTES if k in fields})

    def as_json(self) -> dict[str, Any]:
        """Return the controls as one JSON object, attribute to value (`shedding_memory` with shedding)."""
        out: dict[str, Any] = {
            "evaluation": dump_mode(self.evaluation),
            "expiration": dump_mode(self.expiration),
            "order": self.order if self.order == "auto" else list(self.order),
            "paused": self.paused,
        }
        if self.shedding_memory is not None:
            out["shedding_memory"] = self.shedding_memory
        return out


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """A registered query: its parsed definition, the CQL it came from, and its controls.

    Its JSON form (`to_json`) is made at most once per record, and never for a record read from
    its JSON: that string is kept. `dataclasses.replace` makes a new record, whose JSON is made anew.
    """

    query: QueryDef
    cql: str | None
    controls: QueryControls
    created_at: float
    updated_at: float
    revision: int = 1
    _json: str | None = field(default=None, init=False, repr=False, compare=False)
    """The stored JSON of this record, once made or read (the controls are not in it)."""

    @classmethod
    def of(
        cls, query: QueryDef, *, cql: str | None = None, paused: bool = False, at: float = 0.0
    ) -> QueryRecord:
        """Return a query about to be registered at `at` (unix s): its controls start from its own modes."""
        return cls(query, cql, QueryControls.of(query, paused=paused), at, at)

    @property
    def name(self) -> str:
        """Return the query's name."""
        return self.query.name

    @property
    def streams(self) -> tuple[str, ...]:
        """Return the names of the streams the query reads."""
        return self.query.stream_names

    @property
    def definition(self) -> dict[str, Any]:
        """Return the query's JSON form, every default spelled out (`dump_query`): for a REST answer."""
        return dump_query(self.query)

    def effective(self) -> QueryDef:
        """Return the definition with the controls applied: what a joiner runs (`paused` aside)."""
        return self.controls.apply(self.query)

    def to_json(self) -> str:
        """Return the JSON stored in `streamjoin:queries` and logged (the controls live in their own hash)."""
        if self._json is None:
            stored = dumps(
                {
                    "definition": self.definition,
                    "cql": self.cql,
                    "created_at": self.created_at,
                    "updated_at": self.updated_at,
                    "revision": self.revision,
                }
            )
            object.__setattr__(self, "_json", stored)  # a cache of a frozen record
            return stored
        return self._json

    def with_controls(self, controls: QueryControls) -> QueryRecord:
        """Return this record with other controls, keeping its JSON (which holds no controls)."""
        record = replace(self, controls=controls)
        object.__setattr__(record, "_json", self._json)
        return record

    @classmethod
    def from_json(
        cls, name: str, raw: str | bytes, controls: QueryControls, *, known: QueryRecord | None = None
    ) -> QueryRecord:
        """Build the record from its stored JSON and its controls; parse the definition (once).

        `known`: a record of this query read before; if `raw` is the very JSON it was read from, its
        parsed definition is taken as it is (a reader following the registry parses a query once per
        change of its definition, not once per snapshot).

        Raises:
            QueryError: the stored definition is not a valid query (the registry was written by
                something other than the control plane).
        """
        text = raw.decode() if isinstance(raw, bytes) else raw
        if known is not None and known.name == name and known.to_json() == text:
            return known.with_controls(controls)
        v = json_object(text, f"query {name}")
        definition = v.get("definition")
        if not isinstance(definition, Mapping):
            raise QueryError("definition", f"query {name}: the stored definition is not a JSON object")
        created = float(v.get("created_at") or 0.0)
        record = cls(
            query=parse_query({**definition, "name": name}),
            cql=v.get("cql"),
            controls=controls,
            created_at=created,
            updated_at=float(v.get("updated_at") or created),
            revision=int(v.get("revision") or 1),
        )
        object.__setattr__(record, "_json", text)
        return record
