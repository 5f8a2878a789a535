"""Re-keying inputs: the repartitioners and what they need.

A repartitioner copies one source partition of a re-keyed input into the query's internal topic;
the worker's repartitioners share one producer; their positions survive a lost Redis; internal
topics no query uses are deleted.
"""

__all__: list[str] = []
