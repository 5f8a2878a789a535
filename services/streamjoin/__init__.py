"""streamjoin: continuous sliding-window multi-way joins over Kafka topics."""

__all__ = ["__version__"]

__version__ = "0.1.0"
