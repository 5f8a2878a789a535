"""Following the registry.

The queries it says to run, a lost registry told from an empty one, how far behind the worker
is, and the statuses the worker reports back.
"""

__all__: list[str] = []
