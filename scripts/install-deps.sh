#!/usr/bin/env bash
# Installs what kvcheck's tests need on a fresh Debian machine: a real Prometheus server
# (integration tests of hitrate and lint), libzmq through pyzmq plus python3-msgpack
# (interop tests of tap), python3-jinja2 (the reference renders of audit's template engine),
# and a PostgreSQL server (the tests of reading LiteLLM's database start their own, as the user
# nobody when run as root). Idempotent: does nothing when everything is present.
set -euo pipefail

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
/usr/bin/python3 -c 'import zmq' >/dev/null 2>&1 || need+=(python3-zmq)
/usr/bin/python3 -c 'import msgpack' >/dev/null 2>&1 || need+=(python3-msgpack)
/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1 || need+=(python3-jinja2)
# Debian keeps initdb and pg_ctl under /usr/lib/postgresql/<version>/bin, off PATH.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${need[*]}; run as root or install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
