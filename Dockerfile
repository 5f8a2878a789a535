# syntax=docker/dockerfile:1
# The streamjoin product image: every service (`streamjoin api`, `streamjoin joiner`,
# `streamjoin archiver`) and the topic-creation job (`streamjoin topics create`) run from it; the
# compose file and the Helm chart choose the command. Configuration is only STREAMJOIN_* variables.
#
#   docker build -t streamjoin/streamjoin:0.1.0 .
#
# Base images are pinned to exact versions; pin them by digest too in your registry mirror.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# ---- build: wheels of streamjoin and of every dependency (no compiler in the final image) ----
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY services ./services
# The archiver needs pyarrow, which pyproject.toml lists only in the `spark` extra (with pyspark, which
# the services do not need); it is added here until it is a base dependency.
RUN pip wheel --wheel-dir /wheels . "pyarrow>=15.0.0"

# ---- runtime ----
FROM ${PYTHON_IMAGE}
# curl: health checks of the compose file and the `helm test` pod; tini: signals reach the service.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 streamjoin \
    && useradd --uid 10001 --gid 10001 --home-dir /var/lib/streamjoin --create-home --shell /usr/sbin/nologin streamjoin \
    && install -d -o 10001 -g 10001 /archive  # a named volume mounted here inherits this owner
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels streamjoin pyarrow && rm -rf /wheels
COPY topics/topics.json /etc/streamjoin/topics.json
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    STREAMJOIN_TOPICS_FILE=/etc/streamjoin/topics.json \
    STREAMJOIN_API_HOST=0.0.0.0 \
    STREAMJOIN_API_PORT=8080 \
    STREAMJOIN_ARCHIVE_URL=/archive
WORKDIR /var/lib/streamjoin
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["streamjoin", "--help"]
