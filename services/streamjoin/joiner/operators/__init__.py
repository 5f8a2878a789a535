"""One (query, partition) joined exactly once.

Claim, restore and recover, then the batch loop; the operators' settings and counters, idle
inputs, backlogs, and the attempts of every long-lived task.
"""

__all__: list[str] = []
