"""The archiver's Prometheus metrics, served on a small `/metrics` HTTP port (127.0.0.1 by default).

Metric names (labels `topic`, `partition`):

- `streamjoin_archiver_lag_records`: records in the topic partition not yet in the archive
  (high watermark minus the next offset to archive);
- `streamjoin_archiver_next_offset`: the next offset to archive (one past the last archived);
- `streamjoin_archiver_records_total`, `streamjoin_archiver_files_total`,
  `streamjoin_archiver_bytes_total`: what was written (labels `topic`);
- `streamjoin_archiver_flush_seconds`: how long writing one flush took.
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["ArchiverMetrics"]


class ArchiverMetrics:
    """Hold one archiver's metrics in its own registry, and serve them over HTTP on request."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.lag = Gauge(
            "streamjoin_archiver_lag_records",
            "Records of a topic partition not yet archived.",
            ["topic", "partition"],
            registry=self.registry,
        )
        self.next_offset = Gauge(
            "streamjoin_archiver_next_offset",
            "The next offset of a topic partition to archive.",
            ["topic", "partition"],
            registry=self.registry,
        )
        self.records = Counter(
            "streamjoin_archiver_records", "Records archived.", ["topic"], registry=self.registry
        )
        self.files = Counter(
            "streamjoin_archiver_files", "Archive files written.", ["topic"], registry=self.registry
        )
        self.bytes = Counter(
            "streamjoin_archiver_bytes",
            "Record bytes archived (key + value).",
            ["topic"],
            registry=self.registry,
        )
        self.flush_seconds = Histogram(
            "streamjoin_archiver_flush_seconds", "Time to write one flush.", registry=self.registry
        )
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        """Serve `/metrics` on `host:port` (0: a free port) in a daemon thread; return the port."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        self.port = int(server.server_address[1])
        return self.port

    def close(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
