"""Laying a query out on Kafka.

Its partitioning plan, its output, dead-letter and internal topics (created if missing), what
each operator and repartitioner reads; new queries are laid out in the background.
"""

__all__: list[str] = []
