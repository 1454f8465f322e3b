#!/usr/bin/env bash
# A Docker engine for the container tests, on loopback only, started only when none answers.
#
#   .ci/docker-engine.sh install     # Debian's docker.io and debootstrap, as root (set-up)
#   .ci/docker-engine.sh run CMD...  # start an engine if none answers, make the images,
#                                    # run CMD, then remove the project's containers and stop
#                                    # the engine if this started it; CMD's exit status
#
# Optional: without root, apt-get or a daemon that starts, CMD runs anyway (the real-Kafka
# tests then use the local process) and the reason is printed. The daemon runs without a
# bridge or iptables rules (--bridge=none --iptables=false): containers use the host's
# network and bind 127.0.0.1 (fakebroker.containers).
set -uo pipefail
cd "$(dirname "$0")/.."

log() { printf '[docker] %s\n' "$*" >&2; }
PY=.venv/bin/python
SOCK=/var/run/docker.sock
STATE=${XDG_RUNTIME_DIR:-/tmp}/connect-conformance-dockerd
READY_S=30

# The project's own bounded ping (fakebroker.containers.engine), at $SOCK.
answers() { DOCKER_HOST="unix://$SOCK" $PY -c 'import sys
from fakebroker.containers.engine import docker_unavailable
sys.exit(docker_unavailable() is not None)' 2>/dev/null; }

install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "not installing Docker (needs root and apt-get): the container tests use the local process"
    return 0
  fi
  if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    log "installing docker.io and debootstrap (Debian packages)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null; } \
      || log "docker.io could not be installed: the container tests use the local process"
  fi
}

start() {
  if answers; then log "an engine answers at $SOCK (not ours to stop)"; return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null; then
    log "no engine, and none can be started here (needs root and dockerd): the container tests use the local process"
    return 0
  fi
  mkdir -p "$STATE"
  dockerd --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
          --host "unix://$SOCK" --pidfile "$STATE/dockerd.pid" >"$STATE/dockerd.log" 2>&1 &
  echo $! >"$STATE/ours"
  for _ in $(seq $((READY_S * 5))); do answers && break; sleep 0.2; done
  if ! answers; then
    log "dockerd did not answer within ${READY_S} s ($(tail -1 "$STATE/dockerd.log")): the container tests use the local process"
    stop; return 0
  fi
  log "started dockerd (pid $(cat "$STATE/ours"), no bridge, no iptables)"
}

# The images the container tests run, made before them (once per machine, then reused): no
# test waits for a first build. With both ready the container tests are required to run.
images() {
  answers || return 0
  local t0=$SECONDS
  if $PY -m fakebroker.realkafka image >&2 && $PY -m fakebroker.containers fakebroker-image >&2; then
    log "images ready in $((SECONDS - t0)) s"
    export CONNECT_CONFORMANCE_DOCKER=required
  else
    log "images not ready: the container tests will say why"
  fi
}

stop() {
  if answers; then $PY -m fakebroker.containers cleanup >&2 || true; fi
  [ -f "$STATE/ours" ] || return 0
  local pid; pid=$(cat "$STATE/ours"); rm -f "$STATE/ours"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null && log "dockerd (pid $pid) killed after 20 s" || log "stopped dockerd (pid $pid)"
}

case "${1:-}" in
  install) install ;;
  run)
    shift
    start
    trap 'stop' EXIT
    images
    trap 'exit 130' INT TERM
    "$@"
    ;;
  *) echo "usage: $0 install | run CMD..." >&2; exit 2 ;;
esac
