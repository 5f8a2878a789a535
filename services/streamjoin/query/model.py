"""The query definition: what a user writes, immutable and validated (docs/queries.md, "The query JSON").

A `QueryDef` is built by `streamjoin.query.parse.parse_query` from the query JSON; the runtime
objects that hold state (`streamjoin.engine.MultiJoin`) are built from it, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from streamjoin.query.columns import Item
from streamjoin.query.expr import Expr
from streamjoin.query.grammar import (
    Algorithm,
    AutoOrder,
    Comparison,
    ExpirationMode,
    InputFormat,
    OutputFormat,
    StartName,
)
from streamjoin.query.shedding import SheddingDef

__all__ = [
    "FieldRef",
    "InputDef",
    "JsonScalar",
    "ModeDef",
    "Operand",
    "Predicate",
    "QueryDef",
    "RangeWindow",
    "RowsWindow",
    "StartPosition",
    "WindowDef",
    "WithinPair",
]

# The names a query may write (algorithms, modes, formats, ...) are declared in `query.grammar`.
JsonScalar: TypeAlias = str | int | float | bool | None
StartPosition: TypeAlias = StartName | int | float


@dataclass(frozen=True, slots=True)
class RangeWindow:
    """A time-based window: the last `range` time units (in the query's timestamp unit).

    `strict` makes the bound exclusive (`t_max - ts < range`, Kostowski & Claypool); by default it
    is inclusive (`t_max - ts <= range`, Golab & Özsu).
    """

    range: float
    strict: bool = False


@dataclass(frozen=True, slots=True)
class RowsWindow:
    """A count-based window: the last `rows` records per partition (and per `partition_by` value)."""

    rows: int
    partition_by: str | None = None


WindowDef: TypeAlias = RangeWindow | RowsWindow


@dataclass(frozen=True, slots=True)
class InputDef:
    """One input of a query: a named stream read from a topic, with its own window.

    `window` is None for an input bounded only by the query's `within` pairs. `key` is the field the
    topic is partitioned by (records with equal values of it share a partition number, as Kafka's
    default partitioner places them when producers use that value as the record key); None means
    not keyed or unknown, and the joiner re-keys the input whenever the query needs it partitioned
    (`streamjoin.query.partitioning`, docs/partitioning.md).
    """

    stream: str
    topic: str
    timestamp: str | None
    window: WindowDef | None
    key: str | None = None
    format: InputFormat = "json"
    """How the topic's record values are encoded (the registered stream's, docs/formats.md)."""


@dataclass(frozen=True, slots=True)
class WithinPair:
    """A pairwise window constraint (Hammad et al.'s W-join): `|ts(left) - ts(right)| <= bound`."""

    left: str
    right: str
    bound: float

    @property
    def streams(self) -> frozenset[str]:
        """Return the two inputs the constraint bounds against each other."""
        return frozenset((self.left, self.right))


@dataclass(frozen=True, slots=True)
class FieldRef:
    """An operand `stream.field`."""

    stream: str
    field: str

    def __str__(self) -> str:
        return f"{self.stream}.{self.field}"


Operand: TypeAlias = FieldRef | JsonScalar


@dataclass(frozen=True, slots=True)
class Predicate:
    """One `where` entry: `left op right`."""

    left: Operand
    op: Comparison
    right: Operand

    @property
    def streams(self) -> frozenset[str]:
        """Return the inputs this predicate mentions."""
        return frozenset(o.stream for o in (self.left, self.right) if isinstance(o, FieldRef))

    @property
    def is_join_edge(self) -> bool:
        """Return True for an equality between fields of two different inputs."""
        return (
            self.op == "="
            and isinstance(self.left, FieldRef)
            and isinstance(self.right, FieldRef)
            and self.left.stream != self.right.stream
        )


@dataclass(frozen=True, slots=True)
class ModeDef:
    """Evaluation or expiration mode: eager, lazy every `every` time units, or an invalidation scope.

    The scopes (`probe`, `probe_insert`, `probe_all`) are expiration modes only: the parser refuses
    them as an evaluation mode.
    """

    mode: ExpirationMode = "eager"
    every: float | None = None


@dataclass(frozen=True, slots=True)
class QueryDef:
    """A validated continuous multi-way join query."""

    name: str
    inputs: tuple[InputDef, ...]
    where: tuple[Predicate, ...]
    output_topic: str
    evaluation: ModeDef = field(default_factory=ModeDef)
    expiration: ModeDef = field(default_factory=ModeDef)
    algorithm: Algorithm = "hash"
    order: tuple[str, ...] | AutoOrder = "auto"
    lateness: float = 0
    select: tuple[FieldRef, ...] | None = None
    start: StartPosition = "latest"
    dead_letter_topic: str | None = None
    within: tuple[WithinPair, ...] = ()
    shedding: SheddingDef | None = None
    filter: Expr | None = None
    """A predicate every result satisfies as well as `where` (`streamjoin.query.expr`)."""
    output_format: OutputFormat = "envelope"
    """The output records' shape (docs/formats.md): the envelope, flat rows, or flat rows in Avro."""
    output_schema: str | None = None
    """The Avro schema of the output rows (canonical JSON text) when `output_format` is `avro`."""
    columns: tuple[Item, ...] | None = None
    """The select list as a projection (`streamjoin.query.columns`): results are rows of these columns."""

    @property
    def projects(self) -> bool:
        """Return True when output records are not the joined records whole (`select` or `columns`)."""
        return self.select is not None or self.columns is not None

    @property
    def stream_names(self) -> tuple[str, ...]:
        """Return the input stream names in query order."""
        return tuple(i.stream for i in self.inputs)

    def input_index(self, stream: str) -> int:
        """Return the position of `stream` among the inputs."""
        return self.stream_names.index(stream)

    @property
    def join_edges(self) -> tuple[Predicate, ...]:
        """Return the equalities between two inputs: the edges of the join graph."""
        return tuple(p for p in self.where if p.is_join_edge)

    @property
    def first_join_field(self) -> FieldRef | None:
        """Return the left operand of the first equi-join edge (the output record's Kafka key)."""
        edges = self.join_edges
        if not edges:
            return None
        left = edges[0].left
        return left if isinstance(left, FieldRef) else None

    @property
    def largest_window(self) -> float:
        """Return the largest range window (0 when every window counts rows)."""
        ranges = [i.window.range for i in self.inputs if isinstance(i.window, RangeWindow)]
        return max(ranges, default=0)
