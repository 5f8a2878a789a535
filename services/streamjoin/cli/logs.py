"""The log format of every long-running `streamjoin` command: one line per record on stderr."""

from __future__ import annotations

import logging
import sys

__all__ = ["LOG_FORMAT", "configure_logging"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: str) -> None:
    """Send log records of `level` (a name: "info", "DEBUG") and above to stderr in `LOG_FORMAT`."""
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format=LOG_FORMAT)
