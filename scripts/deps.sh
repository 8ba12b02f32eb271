#!/usr/bin/env bash
# Installs every Debian 12 package that leasehold's build, tests, examples,
# benchmarks and API reference (doxygen) need. Idempotent: installs only what
# is missing. Uses sudo when not run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libboost-url1.81-dev libhiredis-dev libfmt-dev libcli11-dev libssl-dev openssl
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  redis-server redis-tools
  # tests/deploy/check.sh: the Kubernetes manifests (YAML), the example's endpoints
  python3 python3-yaml curl
  clang libclang-rt-14-dev gnuplot-nox procps
  doxygen
  # optional: the leasehold::prometheus component, its example and test
  prometheus-cpp-dev
  # optional: the fenced_postgres example (libpq) and its test (a private PostgreSQL cluster)
  libpq-dev postgresql
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The packaged redis-server and postgresql services are not needed: tests
# start their own.
for service in redis-server postgresql; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
    $sudo systemctl stop "$service" || true
  fi
done
