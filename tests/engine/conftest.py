"""Fixtures and Hypothesis profiles of the engine suite (see `profiles.py` for the budgets)."""

from __future__ import annotations

from .profiles import register_profiles

register_profiles()
