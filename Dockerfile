# The fake broker as a container, for projects in Go, Java or Rust that want it in their own
# CI (docs/fake-broker.md, "The fake broker as a container"; docs/containers.md for
# testcontainers). Build from the checkout:
#   docker build -t fakebroker .
#   docker run --rm -p 127.0.0.1:9092:9092 fakebroker --topic events:3
# Where no registry answers, BASE is the project's own Debian image (python -m
# fakebroker.containers fakebroker-image builds it all; any base with Python 3.11-3.13 and
# its venv module will do).
# Inside the container the broker binds 0.0.0.0 (a container's loopback is unreachable from
# outside it); what reaches it is decided by -p, so publish on 127.0.0.1 as above. It names
# itself localhost in Metadata and FindCoordinator; reached by another name (a CI service,
# a compose network) set FAKEBROKER_ADVERTISED_HOST to that name.
ARG BASE=python:3.12-slim
FROM ${BASE}

# The package's wheel, built here into a venv of its own, without the test extras. Offline
# builds give PACKAGE=connect-conformance and PIP_OPTIONS="--no-index --find-links
# /src/wheels" with the wheels in the context (fakebroker.containers.images stages them).
ARG PACKAGE=/src
ARG PIP_OPTIONS=
COPY . /src
RUN python3 -m venv /opt/fakebroker && /opt/fakebroker/bin/pip install --no-cache-dir $PIP_OPTIONS "$PACKAGE" \
 && rm -rf /src && useradd --system --no-create-home fakebroker
USER fakebroker

ENV PATH=/opt/fakebroker/bin:$PATH \
    FAKEBROKER_HOST=0.0.0.0 \
    FAKEBROKER_PORT=9092 \
    FAKEBROKER_ADVERTISED_HOST=localhost \
    PYTHONUNBUFFERED=1
EXPOSE 9092

# Healthy once the broker answers ApiVersions on its port (plaintext or TLS).
HEALTHCHECK --interval=2s --timeout=5s --start-period=30s --retries=3 CMD ["python3", "-m", "fakebroker.containers.healthcheck"]

# Options from the environment (a GitHub Actions service can set env but not arguments);
# arguments given to `docker run` come after them, so they win (e.g. --topic, --record).
ENTRYPOINT ["sh", "-c", "exec fakebroker serve --host \"$FAKEBROKER_HOST\" --port \"$FAKEBROKER_PORT\" --advertised-host \"$FAKEBROKER_ADVERTISED_HOST\" \"$@\"", "fakebroker"]
CMD []
