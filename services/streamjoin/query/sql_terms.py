"""Translate a sqlglot SELECT tree into the query JSON (`streamjoin.query.sql` is the entry).

Walks the tree node by node: only the constructs listed in docs/queries.md ("SQL") are accepted,
anything else is an error at its position. Nothing is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sqlglot import exp

from streamjoin.query.cql import CqlStream
from streamjoin.query.cql_lex import CqlError
from streamjoin.query.expr import Call, Expr, Lit, Ref, dump_expr
from streamjoin.query.sql_bounds import interval_ms
from streamjoin.query.sql_clauses import JoinWithin
from streamjoin.query.sql_pairs import SqlPairs
from streamjoin.query.sql_select import select_list

__all__ = ["SqlTerms"]

_COMPARE: Mapping[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_BINARY: Mapping[type[exp.Expr], str] = {
    **_COMPARE,
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
}
_UNARY: Mapping[type[exp.Expr], str] = {
    exp.Not: "not",
    exp.Neg: "neg",
    exp.Abs: "abs",
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.Length: "length",
}
_SELECT_ARGS = frozenset({"expressions", "from_", "from", "joins", "where", "kind"})


class _Clauses(Protocol):
    text: str
    windows: dict[str, dict[str, Any]]
    within: tuple[int, int] | None
    shed: tuple[int, int] | None
    join_within: list[JoinWithin]

    def read(
        self, clause: str, span: tuple[int, int], names: list[str], aliases: Mapping[str, str] | None = None
    ) -> Any: ...


def _position(node: exp.Expr) -> int:
    """Return where `node` starts in the text (the first position sqlglot recorded under it)."""
    starts = [n.meta["start"] for n in node.walk() if isinstance(n, exp.Expr) and "start" in n.meta]
    return min(starts, default=0)


class SqlTerms:
    """One translation: the text (for error positions), the registered streams, the aliases."""

    def __init__(
        self, text: str, streams: Mapping[str, CqlStream], error: Callable[[str, int, str], CqlError]
    ) -> None:
        self.text = text
        self.streams = streams
        self.error = error
        self.alias: dict[str, str] = {}  # alias (or stream name) -> stream

    def fail(self, node: exp.Expr, message: str) -> CqlError:
        return self.error(self.text, _position(node), message)

    # -- FROM ---------------------------------------------------------------------------------------
    def query(self, tree: exp.Expr, clauses: _Clauses) -> dict[str, Any]:
        if not isinstance(tree, exp.Select):
            raise self.fail(tree, "expected SELECT ... FROM ...")
        extra = sorted(k for k, v in tree.args.items() if v and k not in _SELECT_ARGS)
        if extra:
            clause = extra[0].upper() + (" BY" if extra[0] in ("group", "order") else "")
            raise self.fail(tree.args[extra[0]], f"not supported in a continuous join: {clause}")
        source = tree.args.get("from_") or tree.args.get("from")
        if source is None:
            raise self.fail(tree, "expected FROM")
        inputs = [self.input(source.this, clauses)]
        conditions: list[exp.Expr] = []
        joins: list[exp.Expr] = tree.args.get("joins") or []
        for join in joins:
            if (
                join.args.get("side")
                or join.args.get("kind") not in (None, "", "INNER")
                or join.args.get("using")
            ):
                raise self.fail(join, "only inner joins (JOIN ... ON, or a comma) are supported")
            inputs.append(self.input(join.this, clauses))
            if join.args.get("on") is not None:
                conditions.append(join.args["on"])
        names = [i["stream"] for i in inputs]
        if tree.args.get("where") is not None:
            conditions.append(tree.args["where"].this)
        within: list[list[Any]] = []
        if clauses.within is not None:
            within = clauses.read("within", clauses.within, names, self.alias)
        terms = self.conditions(conditions)
        pairs = SqlPairs(self, inputs, joins, clauses)
        within, terms = pairs.bounds(within, terms)
        where, filters = self.split(terms)
        out: dict[str, Any] = {"inputs": inputs, "where": where}
        if filters:
            out["filter"] = dump_expr(filters[0] if len(filters) == 1 else Call("and", tuple(filters)))
        out |= select_list(tree.expressions, self.expr, self.alias, self.fail)
        if within:
            out["within"] = within
        if clauses.shed is not None:
            out["shedding"] = clauses.read("shed", clauses.shed, names)
        return out

    def input(self, node: exp.Expr, clauses: _Clauses) -> dict[str, Any]:
        if not isinstance(node, exp.Table) or node.args.get("db") or node.args.get("catalog"):
            raise self.fail(node, "expected a registered stream name")
        name = node.name
        if name not in self.streams:
            raise self.fail(node, f"unknown stream {name!r}; registered: {sorted(self.streams)}")
        if name in self.alias.values():
            raise self.fail(node, f"stream {name!r} appears twice in FROM")
        alias = node.alias or name
        if alias in self.alias:
            raise self.fail(node, f"alias {alias!r} is used twice")
        self.alias[alias] = name
        stream = self.streams[name]
        entry: dict[str, Any] = {"stream": name, "topic": stream.topic, "timestamp": stream.timestamp}
        entry |= {} if stream.key is None else {"key": stream.key}
        window = clauses.windows.get(name)
        if window is not None:
            entry["window"] = window
        return entry

    # -- conditions -----------------------------------------------------------------------------------
    def conditions(self, nodes: list[exp.Expr]) -> list[tuple[int, Expr]]:
        """Return the terms of the conjunction of ON and WHERE, each with its position."""
        terms: list[tuple[int, Expr]] = []
        for node in nodes:
            for term in node.flatten() if isinstance(node, exp.And) else (node,):
                term = term.unnest()
                terms.append((_position(term), self.expr(term)))
        return terms

    def split(self, terms: list[tuple[int, Expr]]) -> tuple[list[list[Any]], list[Expr]]:
        """Split the terms into `where` triples and `filter` terms."""
        where: list[list[Any]] = []
        filters: list[Expr] = []
        for _, value in terms:
            triple = self.triple(value)
            if triple is not None:
                where.append(triple)
            else:  # a constant term (`1 = 1`) is allowed, as in SQL
                filters.append(value)
        return where, filters

    def triple(self, value: Expr) -> list[Any] | None:
        """Return `value` as a `where` triple when it is one (a comparison of flat fields and literals)."""
        if not (isinstance(value, Call) and value.op in _COMPARE.values()):
            return None
        operands: list[Any] = []
        for arg in value.args:
            if isinstance(arg, Ref) and len(arg.path) == 1:
                operands.append(str(arg))
            elif isinstance(arg, Lit) and arg.value is not None and not self.reads_as_ref(arg.value):
                operands.append(arg.value)
            else:
                return None
        if not any(isinstance(a, Ref) for a in value.args):
            return None
        return [operands[0], value.op, operands[1]]

    def reads_as_ref(self, value: object) -> bool:
        """Return True for a string `parse_operand` would read as `stream.field` (or refuse as one)."""
        if not isinstance(value, str):
            return False
        head, dot, rest = value.partition(".")
        return bool(dot and rest and head.isidentifier())

    # -- expressions ----------------------------------------------------------------------------------
    def expr(self, node: exp.Expr) -> Expr:
        node = node.unnest()
        if isinstance(node, exp.Column | exp.Dot):
            return self.ref(node)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Lit(str(node.this))
            number = float(node.this)
            return Lit(int(node.this) if number.is_integer() and node.this.lstrip("-").isdigit() else number)
        if isinstance(node, exp.Boolean):
            return Lit(bool(node.this))
        if isinstance(node, exp.Null):
            return Lit(None)
        if isinstance(node, exp.Interval):
            return Lit(interval_ms(node, self.fail))
        for kind, op in _BINARY.items():
            if type(node) is kind:
                return Call(op, (self.expr(node.this), self.expr(node.expression)))
        for kind, op in _UNARY.items():
            if type(node) is kind:
                return Call(op, (self.expr(node.this),))
        return self.special(node)

    def special(self, node: exp.Expr) -> Expr:
        if isinstance(node, exp.And | exp.Or):
            op = "and" if isinstance(node, exp.And) else "or"
            return Call(op, tuple(self.expr(n) for n in node.flatten()))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail(node, "IS takes NULL or NOT NULL")
            return Call("is_null", (self.expr(node.this),))
        if isinstance(node, exp.Between):
            return Call("between", tuple(self.expr(node.args[k]) for k in ("this", "low", "high")))
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or not node.expressions:
                raise self.fail(node, "IN takes a list of values")
            return Call("in", (self.expr(node.this), *(self.expr(v) for v in node.expressions)))
        if isinstance(node, exp.Round | exp.Floor | exp.Ceil):
            digits = node.args.get("decimals")
            if digits is not None and not isinstance(node, exp.Round):
                raise self.fail(node, f"{node.key.upper()} takes one argument")
            name = node.key.lower()
            args = (self.expr(node.this),) if digits is None else (self.expr(node.this), self.expr(digits))
            return Call(name, args)
        if isinstance(node, exp.Coalesce):
            return Call("coalesce", (self.expr(node.this), *(self.expr(v) for v in node.expressions)))
        if isinstance(node, exp.AggFunc):
            raise self.fail(
                node,
                f"aggregate function {node.sql_name().lower()!r} is not supported: a continuous join "
                "emits one row per result (no aggregates, no GROUP BY)",
            )
        if isinstance(node, exp.Func):
            name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
            known = "abs, lower, upper, length, round, floor, ceil, coalesce"
            raise self.fail(node, f"unknown function {name.lower()!r}; use {known}")
        raise self.fail(node, f"not supported here: {node.sql()!r}")

    def ref(self, node: exp.Expr) -> Ref:
        parts = self.ref_parts(node)
        names = [p.name for p in parts]
        if any(isinstance(p, exp.Star) for p in parts):
            raise self.fail(node, "* is only allowed alone in the select list")
        if len(names) < 2:
            raise self.fail(node, f"qualify the field with its stream or alias (s.{names[0]})")
        stream = self.alias.get(names[0])
        if stream is None:
            raise self.fail(parts[0], f"unknown stream or alias {names[0]!r}")
        return Ref(stream, tuple(names[1:]))

    def ref_parts(self, node: exp.Expr) -> list[exp.Expr]:
        if isinstance(node, exp.Dot):
            return [*self.ref_parts(node.this), node.expression]
        if isinstance(node, exp.Column):
            return list(node.parts)
        raise self.fail(node, "expected a field path (stream.field.key...)")
