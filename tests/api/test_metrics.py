"""`/metrics`: the statistics a joiner published in Redis, in Prometheus' text format."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from streamjoin.api.metrics import CATALOG
from streamjoin.registry import OperatorStats, WindowStats

from .publish import QUERY, publish_stats
from .server import ApiServer


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_every_statistic_is_exported_with_its_labels(streams: ApiServer) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=QUERY).status_code == 201
    publish_stats(api)
    response = api.anon.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples = _samples(response.text)

    def value(name: str, **labels: str) -> float:
        return samples[(name, frozenset(labels.items()))]

    a0 = {"query": "q", "stream": "a", "partition": "0"}
    aw0 = {**a0, "window": "RANGE 100"}
    p1 = {"query": "q", "partition": "1"}
    assert value("streamjoin_input_records_total", **a0) == 11
    assert value("streamjoin_window_records", **aw0) == 3
    assert value("streamjoin_window_bytes", **aw0) == 300
    assert value("streamjoin_window_table_records", **aw0) == 6
    assert value("streamjoin_window_table_shared_records", **aw0) == 2
    assert (
        value("streamjoin_window_distinct_keys", query="q", stream="b", window="ROWS 50", partition="0") == 4
    )
    assert value("streamjoin_expirations_total", **aw0) == 8
    assert value("streamjoin_late_records_total", **a0) == 1
    assert value("streamjoin_comparisons_total", query="q", stream="b", partition="1") == 9
    assert value("streamjoin_malformed_records_total", **a0) == 2
    assert value("streamjoin_consumer_lag_records", **a0) == 5
    assert value("streamjoin_results_total", **p1) == 7
    assert value("streamjoin_output_records_total", **p1) == 6
    assert value("streamjoin_watermark_lag_seconds", **p1) == 0.5
    assert value("streamjoin_plan_observed_cost", **p1) == 10.5
    assert value("streamjoin_plan_estimated_cost", query="q") == 42.0
    assert value("streamjoin_plan_changes_total", query="q") == 0
    assert value("streamjoin_plan_info", query="q", global_order="a,b") == 1
    assert [k for k in samples if k[0] == "streamjoin_plan_info"] == [
        ("streamjoin_plan_info", frozenset({("query", "q"), ("global_order", "a,b")}))
    ]  # one series per query: the current order only
    assert value("streamjoin_processing_latency_seconds_bucket", **p1, le="0.005") == 10
    assert value("streamjoin_processing_latency_seconds_bucket", **p1, le="+Inf") == 12
    assert value("streamjoin_processing_latency_seconds_count", **p1) == 12
    assert abs(value("streamjoin_processing_latency_seconds_sum", **p1) - 0.44) < 1e-9
    assert value("streamjoin_queries", status="running") == 1
    assert value("streamjoin_queries", status="paused") == 0
    assert value("streamjoin_streams") == 3
    assert value("streamjoin_query_paused", query="q") == 0
    assert 0 <= value("streamjoin_stats_age_seconds", **p1) < 60
    names = {f.name for f in text_string_to_metric_families(response.text)}
    assert {spec.name for spec in CATALOG} <= names  # every catalogued family is present


def test_stats_of_unregistered_queries_are_not_exported(api: ApiServer) -> None:
    api.call("write_stats", "ghost", 0, OperatorStats(results=1), {"a": WindowStats(records=1)})
    assert "ghost" not in api.anon.get("/metrics").text


def test_no_stats_no_samples_but_valid_exposition(streams: ApiServer) -> None:
    assert streams.client.post("/v1/queries", json=QUERY).status_code == 201
    text = streams.anon.get("/metrics").text
    samples = _samples(text)
    assert samples[("streamjoin_queries", frozenset({("status", "pending")}))] == 1
    assert not any(name == "streamjoin_results_total" for name, _ in samples)
