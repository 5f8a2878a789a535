"""Property-based requests from the OpenAPI document (schemathesis): no answer is a server error.

schemathesis' pytest plugin does not run under pytest 9 (it reads a removed private attribute), so the
operations are driven directly: one bounded hypothesis run per operation, all in this one test.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from .conftest import StartApi
from .server import TOKEN

MAX_EXAMPLES = 30


@pytest.mark.slow
def test_no_server_errors(start_api: StartApi) -> None:
    with start_api(api_results_timeout_ms=300, api_ready_timeout_ms=1_000) as api:
        for name in ("a", "b"):
            assert (
                api.client.post("/v1/streams", json={"name": name, "topic": f"t.{name}"}).status_code == 201
            )
        schema = schemathesis.openapi.from_url(f"{api.url}/openapi.json")
        failures: list[str] = []
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 18

        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
            def check(case: schemathesis.Case) -> None:
                response = case.call(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
                if response.status_code >= 500:
                    failures.append(
                        f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
                    )

            check()
        assert not failures, "\n".join(failures[:20])
        assert api.anon.get("/healthz").status_code == 200
