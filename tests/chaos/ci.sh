#!/usr/bin/env bash
# CI entry point for chaos testing, about three minutes of it: two fixed
# seeds against the safe build on one server, one fixed seed on a Sentinel
# deployment and one on a Redis Cluster, both in confirm mode (every replica:
# no overlap, no token regression across failovers), then the checker's
# self-test (tests/chaos/selftest.sh).
# Only fixed seeds, so that a verdict belongs to the commit, not to chance:
# random-seed exploration is scripts/explore.sh.
#
# It reuses the build directory of the test command (build/release, with its
# cached options) and only builds the two targets it needs; set
# LEASEHOLD_CHAOS_BUILD to use another one (it is configured if missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LEASEHOLD_CHAOS_BUILD:-$root/build/release}
duration=${LEASEHOLD_CHAOS_DURATION:-15}
jobs=${LEASEHOLD_JOBS:-2}
start=$(date +%s)

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEHOLD_WERROR=ON \
    -DLEASEHOLD_DEBUG_INFO="${LEASEHOLD_DEBUG_INFO:-full}" \
    -DLEASEHOLD_BUILD_EXAMPLES=OFF -DLEASEHOLD_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target leasehold_chaos leasehold_member
runner="$build/tests/chaos/leasehold_chaos"

for seed in ${LEASEHOLD_CHAOS_SEEDS:-20261202 20261203}; do
  echo "== chaos: seed $seed"
  "$runner" --seed "$seed" --duration "$duration"
done

sentinel_seed=${LEASEHOLD_CHAOS_SENTINEL_SEED:-20261372}
echo "== chaos: sentinel, confirm mode with both replicas, seed $sentinel_seed"
"$runner" --topology sentinel --confirm-replicas 2 --seed "$sentinel_seed" \
  --duration "${LEASEHOLD_CHAOS_SENTINEL_DURATION:-45}"

cluster_seed=${LEASEHOLD_CHAOS_CLUSTER_SEED:-20261501}
echo "== chaos: cluster, confirm mode with each shard's replica, seed $cluster_seed"
"$runner" --topology cluster --confirm-replicas 1 --seed "$cluster_seed" \
  --duration "${LEASEHOLD_CHAOS_CLUSTER_DURATION:-35}"

echo "== chaos: checker self-test"
LEASEHOLD_CHAOS_BUILD="$build" LEASEHOLD_JOBS="$jobs" "$root/tests/chaos/selftest.sh"

echo "== chaos passed in $(( $(date +%s) - start )) s"
