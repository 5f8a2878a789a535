"""Hypothesis budgets of the engine suite, chosen by `STREAMJOIN_HYPOTHESIS` (dev, ci or thorough).

The profiles are registered by `tests/engine/conftest.py` and applied per test through
`engine_settings`, never loaded globally, so they do not change other suites' defaults. Every test
states its example count for the dev profile; `ci` runs the same counts without the example database
(a fresh runner has none), `thorough` ten times as many. With `print_blob=True` a failure prints the
`@reproduce_failure` blob to paste above the test.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "engine_settings", "register_profiles"]

_T = TypeVar("_T", bound=Callable[..., Any])
_SCALE = {"engine-dev": 1.0, "engine-ci": 1.0, "engine-thorough": 10.0}


def register_profiles() -> None:
    """Register the engine-dev, engine-ci and engine-thorough profiles."""
    settings.register_profile(
        "engine-dev",
        deadline=None,
        derandomize=False,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    settings.register_profile("engine-ci", settings.get_profile("engine-dev"), database=None)
    settings.register_profile("engine-thorough", settings.get_profile("engine-dev"))


register_profiles()
PROFILE = "engine-" + os.environ.get("STREAMJOIN_HYPOTHESIS", "ci" if os.environ.get("CI") else "dev")
if PROFILE not in _SCALE:
    raise ValueError(f"STREAMJOIN_HYPOTHESIS must be one of dev, ci, thorough; not {PROFILE[7:]!r}")


def engine_settings(examples: int) -> Callable[[_T], _T]:
    """Return the settings decorator of a test that runs `examples` examples under the dev profile."""
    count = max(1, round(examples * _SCALE[PROFILE]))
    decorator: Callable[[_T], _T] = settings(settings.get_profile(PROFILE), max_examples=count)
    return decorator
