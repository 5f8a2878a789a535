"""`/metrics` scraped by a real Prometheus, and the values read back with PromQL over its HTTP API."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import StartApi
from .prometheus import BINARY, running_prometheus
from .publish import QUERY, publish_stats
from .server import TOKEN

pytestmark = pytest.mark.skipif(not Path(BINARY).exists(), reason="Debian's prometheus is not installed")


def test_prometheus_scrapes_the_control_tables(start_api: StartApi, tmp_path: Path) -> None:
    with start_api(api_read_token_required=True) as api:
        for name, topic in (("a", "net.a"), ("b", "net.b")):
            assert api.client.post(
                "/v1/streams", json={"name": name, "topic": topic, "timestamp": "ts"}
            ).is_success
        assert api.client.post("/v1/queries", json=QUERY).status_code == 201
        publish_stats(api)
        target = api.url.removeprefix("http://")
        with running_prometheus(target, tmp_path, bearer=TOKEN) as prometheus:
            up = prometheus.wait_for('up{job="streamjoin-api"} == 1')
            assert up, "Prometheus could not scrape the API (with the bearer token)"
            results = prometheus.wait_for('sum(streamjoin_results_total{query="q"})')
            assert float(results[0]["value"][1]) == 14
            records_in = prometheus.query('sum by (stream) (streamjoin_input_records_total{query="q"})')
            assert {r["metric"]["stream"]: float(r["value"][1]) for r in records_in} == {"a": 22, "b": 26}
            window = prometheus.query('streamjoin_window_bytes{query="q", stream="b", partition="0"}')
            assert window[0]["metric"]["window"] == "ROWS 50" and float(window[0]["value"][1]) == 500
            buckets = 'sum by (le) (streamjoin_processing_latency_seconds_bucket{query="q"})'
            median = prometheus.query(f"histogram_quantile(0.5, {buckets})")
            assert 0 < float(median[0]["value"][1]) <= 0.005
            running = prometheus.query('streamjoin_queries{status="running"}')
            assert float(running[0]["value"][1]) == 1
            cost = prometheus.query('streamjoin_plan_estimated_cost{query="q"}')
            assert float(cost[0]["value"][1]) == 42
