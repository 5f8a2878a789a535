"""Writing to Kafka without gaps.

The output publisher, the producer life cycle it shares with the re-keying producer, the
outbox records and the topics they go to.
"""

__all__: list[str] = []
