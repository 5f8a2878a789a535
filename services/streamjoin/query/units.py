"""Time units of the query texts: CQL's and SQL's window and `WITHIN` sizes, SQL's `INTERVAL`s.

A size written with a unit is converted to milliseconds (the texts assume millisecond timestamps);
a bare size stays in the query's timestamp unit. Every spelling is declared here once, so the CQL
parser, the SQL front end and their error messages agree.

>>> in_ms(1.5, "SECONDS"), unit_ms("minute")
(1500, 60000)
>>> unknown_unit("FORTNIGHTS")
"unknown time unit 'FORTNIGHTS': use MS, MILLISECOND(S), SECOND(S), MINUTE(S), HOUR(S) or DAY(S)"
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TIME_UNITS_MS", "in_ms", "unit_ms", "unknown_unit"]

_BASE_MS = {"MILLISECOND": 1, "SECOND": 1_000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}

TIME_UNITS_MS: Mapping[str, int] = {
    "MS": 1,
    **_BASE_MS,
    **{f"{unit}S": ms for unit, ms in _BASE_MS.items()},
}
"""Milliseconds per unit, by its upper-case spelling (singular or plural; `MS`)."""

_SPELLINGS = "MS, " + ", ".join(f"{unit}(S)" for unit in _BASE_MS)


def unit_ms(word: str) -> int | None:
    """Return the milliseconds of the unit `word` (any case), None if it is not one."""
    return TIME_UNITS_MS.get(word.upper())


def in_ms(size: int | float, unit: str) -> int | float:
    """Return `size` `unit`s in milliseconds, as an integer when it is whole."""
    ms = size * TIME_UNITS_MS[unit.upper()]
    return int(ms) if isinstance(ms, float) and ms.is_integer() else ms


def unknown_unit(word: str) -> str:
    """Return the message for a time unit that is not one: it lists the valid spellings."""
    head, _, last = _SPELLINGS.rpartition(", ")
    return f"unknown time unit {word!r}: use {head} or {last}"
