"""Re-keyed records: the routing and headers a repartitioner writes, read back by an operator."""

__all__: list[str] = []
