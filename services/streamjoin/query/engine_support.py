"""The one gate for what a query may say but the engine cannot run yet.

`within` pairs, strict range windows and the invalidation-scope expiration modes (`probe`,
`probe_insert`, `probe_all`) are part of the query model: they parse, validate, dump, format as
CQL, and the planner and the oracle (`streamjoin.testing`) understand them. The engine does not
execute them yet, so `parse_query` (the entry of the API, the joiner, replay and the back-fill)
refuses them here with an `UnsupportedQueryError` (a `QueryError`: HTTP 422, exit status 2), rather
than let an engine run them with the wrong meaning. `parse_definition` skips this gate.
"""

from __future__ import annotations

from streamjoin.query.errors import QueryError
from streamjoin.query.model import QueryDef, RangeWindow

__all__ = ["UnsupportedQueryError", "require_engine_support"]

_NOT_YET = "is not supported yet by the engine"


class UnsupportedQueryError(QueryError):
    """A valid query that uses a feature the engine does not execute yet."""


def require_engine_support(query: QueryDef) -> QueryDef:
    """Return `query` unchanged, or raise `UnsupportedQueryError` naming the first unsupported field."""
    if query.within:
        raise UnsupportedQueryError("within", f'"within" (pairwise window constraints) {_NOT_YET}')
    for index, inp in enumerate(query.inputs):
        if inp.window is None:
            raise UnsupportedQueryError(f"inputs[{index}].window", f"an input without a window {_NOT_YET}")
        if isinstance(inp.window, RangeWindow) and inp.window.strict:
            raise UnsupportedQueryError(f"inputs[{index}].window.strict", f"a strict range window {_NOT_YET}")
    if query.expiration.mode not in ("eager", "lazy"):
        raise UnsupportedQueryError(
            "expiration.mode", f"expiration mode {query.expiration.mode!r} {_NOT_YET} (use eager or lazy)"
        )
    return query
