"""Where an operator publishes: its results and dead-letter topics with their partition counts."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OutputTopics"]


@dataclass(frozen=True, slots=True)
class OutputTopics:
    """Where an operator publishes: results and dead letters, with their partition counts."""

    results: str
    results_partitions: int
    dead: str
    dead_partitions: int
    input_partitions: int

    def partition(self, name: str, p: int) -> tuple[str, int]:
        """Return (topic, partition) of outbox `name` for input partition `p`."""
        if name == "results":
            return self.results, p % self.results_partitions
        return self.dead, p % self.dead_partitions

    def exclusive(self, name: str) -> bool:
        """Return True when input partition p alone publishes to outbox `name`'s partition: results
        with at least as many output partitions as input partitions (dead letters are shared)."""
        return name == "results" and self.results_partitions >= self.input_partitions
