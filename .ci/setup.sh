#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine; cheap when already done.
# Used by `make test`, `make certify` and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  log "need root for: $*"; return 1; fi; }

# Debian packages: tshark dissects our pcaps in the tests.
if ! command -v tshark >/dev/null 2>&1; then
  log "installing tshark (Debian package)"
  as_root apt-get update -qq
  echo "wireshark-common wireshark-common/install-setuid boolean false" | as_root debconf-set-selections
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq tshark >/dev/null
fi

# Headless Chromium opens the rendered Allure report (tests/conformance/test_allure_report.py)
# and the pipeline's HTML report (tests/pipeline/test_report_browser.py).
if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium (Debian package)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi

# Python: a project venv with the package (editable) and its test extras.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  log "installing Python dependencies"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test,spark]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi

# A real Apache Kafka beside the fake broker (tests/realkafka, bench/coordinator.py): Kafka
# 4.2.0's broker jars from Maven Central, resolved once into ~/.cache/connect-conformance
# (offline afterwards; never into the repository). Needs Java 17+ and Maven.
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  log "installing Java 17 and Maven (Debian packages)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null
fi
.venv/bin/python -m fakebroker.realkafka resolve
# Docker (Debian's docker.io) and debootstrap for the container tests: optional, root only;
# the engine itself runs only during `make test` (.ci/docker-engine.sh run).
bash .ci/docker-engine.sh install
# Apache Kafka Connect 4.2.0's distributed worker (a bundled worker target, tests/proxy):
# connect-runtime, connect-json, connect-file (fakebroker/realconnect/pom.xml, a template rendered for
# the bundled release, CONNECT_VERSION), resolved the same way into
# ~/.cache/connect-conformance/connect-<version> (a no-op once the cache matches the POM).
.venv/bin/python -m fakebroker.realconnect resolve

# actionlint checks the copy-paste GitHub Actions workflow (examples/ci/) in the tests; built
# from the Go module proxy into the venv's bin (its release binaries are not reachable here).
if [ ! -x .venv/bin/actionlint ]; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$GO" ] || { log "need Go 1.25+ (https://go.dev/dl/) to build actionlint"; exit 1; }
  log "installing actionlint 1.7.12 (Go module proxy)"
  GOBIN="$PWD/.venv/bin" "$GO" install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
fi

# franz-go's kfake, a Kafka-compatible broker written by others, is a bundled calibration
# target (fixtures/targets/kfake.toml): fakebroker/thirdparty/kfake built with the Go module
# proxy into the venv's bin as kfake-broker, again only when its go.sum (the pinned modules)
# or main.go changed.
kfake_src=fakebroker/thirdparty/kfake
kfake_stamp=.venv/.kfake-$(cat "$kfake_src/go.sum" "$kfake_src/go.mod" "$kfake_src/main.go" | sha1sum | cut -c1-12)
if [ ! -x .venv/bin/kfake-broker ] || [ ! -f "$kfake_stamp" ]; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$GO" ] || { log "need Go 1.26+ (https://go.dev/dl/) to build kfake"; exit 1; }
  log "building kfake-broker ($kfake_src, Go module proxy)"
  (cd "$kfake_src" && "$GO" build -trimpath -o "$OLDPWD/.venv/bin/kfake-broker" .)
  rm -f .venv/.kfake-*
  touch "$kfake_stamp"
fi

# Allure's report generator (allure-commandline, npm; runs on the JDK above) renders the
# certificate's HTML report as one self-contained file.
if [ ! -x .venv/node/node_modules/.bin/allure ]; then
  log "installing allure-commandline 2.46.1 (npm)"
  npm install --no-save --no-audit --no-fund --prefix .venv/node allure-commandline@2.46.1 >/dev/null
fi
