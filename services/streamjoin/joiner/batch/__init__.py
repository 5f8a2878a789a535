"""One batch of an operator: decode its records, feed the engine, build the atomic commit."""

__all__: list[str] = []
