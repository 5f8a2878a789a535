#!/bin/sh
# `helm test`: register a query over the control plane's REST API, produce one matching record to
# each input, and read the joined result back from the API. Runs in the streamjoin image (curl,
# python3 with confluent-kafka, the `streamjoin` CLI); tests/deploy runs it against a live stack too.
#
# Environment: STREAMJOIN_API_URL, STREAMJOIN_API_TOKEN, STREAMJOIN_KAFKA_* (the chart's settings),
# STREAMJOIN_TEST_TIMEOUT_S (default 120). Exits 0 only when the joined result came back.
set -eu

api="${STREAMJOIN_API_URL:?}"
timeout_s="${STREAMJOIN_TEST_TIMEOUT_S:-120}"
run="helmtest_$(date +%s)_$$"
left="streamjoin.helm-test.left"
right="streamjoin.helm-test.right"
out="streamjoin.helm-test.out"
work="$(mktemp -d)"
auth="Authorization: Bearer ${STREAMJOIN_API_TOKEN:-}"
export run left right

say() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }

call() {  # call METHOD PATH [BODY]: one API request; prints the body, fails on an HTTP error
    method="$1"; path="$2"; shift 2
    if [ $# -gt 0 ]; then
        curl -sS --fail-with-body --max-time 30 -X "$method" -H "$auth" -H 'Content-Type: application/json' \
            --data "$1" "$api$path"
    else
        curl -sS --fail-with-body --max-time 30 -X "$method" -H "$auth" "$api$path"
    fi
}

cleanup() {
    call DELETE "/v1/queries/$run" >/dev/null 2>&1 || true
    call DELETE "/v1/streams/${run}_l" >/dev/null 2>&1 || true
    call DELETE "/v1/streams/${run}_r" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

say "control plane $api: $(call GET /readyz)"

say "creating the test topics (idempotent)"
cat >"$work/topics.json" <<JSON
{"topics": [
  {"name": "$left", "role": "input", "partitions": 1, "config": {"retention.ms": "3600000"}},
  {"name": "$right", "role": "input", "partitions": 1, "config": {"retention.ms": "3600000"}},
  {"name": "$out", "role": "output", "partitions": 1, "config": {"retention.ms": "3600000"}}
]}
JSON
streamjoin topics create --file "$work/topics.json"

say "registering streams ${run}_l, ${run}_r and query $run"
call POST /v1/streams "{\"name\": \"${run}_l\", \"topic\": \"$left\", \"timestamp\": \"ts\"}" >/dev/null
call POST /v1/streams "{\"name\": \"${run}_r\", \"topic\": \"$right\", \"timestamp\": \"ts\"}" >/dev/null
call POST /v1/queries "{\"name\": \"$run\",
  \"inputs\": [{\"stream\": \"${run}_l\", \"window\": {\"range\": 600000}},
               {\"stream\": \"${run}_r\", \"window\": {\"range\": 600000}}],
  \"where\": [[\"${run}_l.k\", \"=\", \"${run}_r.k\"]],
  \"output\": {\"topic\": \"$out\"}}" >/dev/null

say "waiting for the query to run (every input partition assigned and positioned)"
deadline=$(( $(date +%s) + timeout_s ))
until call GET "/v1/queries/$run" | grep -q '"status": *"running"'; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        say "FAILED: query $run is not running after ${timeout_s}s: $(call GET "/v1/queries/$run")"
        exit 1
    fi
    sleep 1
done

since_ms=$(( $(date +%s) * 1000 - 1000 ))
say "producing one record to each input"
python3 - <<'PY'
import json, os, time
from confluent_kafka import Producer

env = os.environ.get
conf = {
    "bootstrap.servers": env("STREAMJOIN_KAFKA_BOOTSTRAP", "127.0.0.1:9092"),
    "security.protocol": env("STREAMJOIN_KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"),
    "enable.idempotence": True,
}
if env("STREAMJOIN_KAFKA_SASL_MECHANISM"):
    conf.update({"sasl.mechanism": env("STREAMJOIN_KAFKA_SASL_MECHANISM"),
                 "sasl.username": env("STREAMJOIN_KAFKA_SASL_USERNAME", ""),
                 "sasl.password": env("STREAMJOIN_KAFKA_SASL_PASSWORD", "")})
for option, variable in (("ssl.ca.location", "STREAMJOIN_KAFKA_TLS_CA_FILE"),
                         ("ssl.certificate.location", "STREAMJOIN_KAFKA_TLS_CERT_FILE"),
                         ("ssl.key.location", "STREAMJOIN_KAFKA_TLS_KEY_FILE")):
    if env(variable):
        conf[option] = env(variable)
producer = Producer(conf)
run, now = os.environ["run"], int(time.time() * 1000)
for topic, side in ((os.environ["left"], "left"), (os.environ["right"], "right")):
    producer.produce(topic, json.dumps({"k": run, "ts": now, "side": side}).encode(), key=run.encode())
left = producer.flush(30)
if left:
    raise SystemExit(f"{left} records were not delivered")
PY

say "reading the joined result"
results="$(curl -sS --fail-with-body --max-time $(( timeout_s + 10 )) -H "$auth" \
    "$api/v1/queries/$run/results?format=ndjson&from=$since_ms&limit=1&timeout_ms=$(( timeout_s * 1000 ))")"
if printf '%s' "$results" | grep -q "\"$run\""; then
    say "OK: $results"
else
    say "FAILED: no joined result for $run within ${timeout_s}s (got: ${results:-nothing})"
    exit 1
fi
