#!/usr/bin/env bash
# Flake hunt: runs the whole suite N times with `ctest -j2` while a second,
# uncached build keeps the machine busy (the load a shared CI host sees), and
# prints how often each test failed. A test that fails even once is fixed or
# made deterministic; never retried.
#
#   scripts/flake-hunt.sh          20 runs
#   scripts/flake-hunt.sh 5        5 runs
#
# Environment: LEASEHOLD_BUILD_DIR (the tested build, default build/release;
# configured and built first), LEASEHOLD_LOAD_DIR (the load build's directory,
# default build/load, rebuilt from clean with ccache off, over and over).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-20}
build=${LEASEHOLD_BUILD_DIR:-$root/build/release}
load=${LEASEHOLD_LOAD_DIR:-$root/build/load}
log_dir=$build/flake-hunt
mkdir -p "$log_dir"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEHOLD_WERROR=ON >/dev/null
cmake --build "$build" -j 2 || exit 1
cmake -S "$root" -B "$load" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLEASEHOLD_BUILD_BENCH=OFF >/dev/null

# The load: a clean uncached build, repeated until the runs are over. Its own
# session, so that the whole process group (ninja and the compilers) stops.
setsid bash -c "while true; do
    cmake --build '$load' --target clean >/dev/null 2>&1
    CCACHE_DISABLE=1 cmake --build '$load' -j 2 >/dev/null 2>&1
  done" &
load_pid=$!
trap 'kill -- -$load_pid 2>/dev/null' EXIT

failed_runs=0
for i in $(seq 1 "$runs"); do
  started=$(date +%s)
  if ctest --test-dir "$build" -j 2 --timeout 300 --output-on-failure >"$log_dir/run-$i.log" 2>&1; then
    verdict=passed
  else
    verdict=FAILED
    failed_runs=$((failed_runs + 1))
  fi
  echo "run $i/$runs: $verdict in $(( $(date +%s) - started )) s, load $(cut -d' ' -f1 /proc/loadavg)"
done

echo
echo "== $runs runs, $failed_runs with a failure"
grep -h -E '^\s+[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$log_dir"/run-*.log \
  | sed -E 's/^\s+[0-9]+ - //' | sort | uniq -c | sort -rn
[ "$failed_runs" -eq 0 ]
