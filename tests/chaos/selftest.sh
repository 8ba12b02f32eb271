#!/usr/bin/env bash
# The chaos checker's self-test: a checker that never fails proves nothing.
#
# Builds a second copy of leasehold_member in build/unsafe with
# LEASEHOLD_UNSAFE_DEADLINE_FROM_REPLY=ON (leases measured from the reply
# instead of the send instant), runs the delayed-replies scenario against it
# and EXPECTS the run to fail with overlaps; then runs the very same schedule
# (same seed) against the safe member and expects it to pass.
# Exits 0 only if both happen.
#
# Environment: LEASEHOLD_CHAOS_BUILD (safe build dir, default build/release,
# configured here if missing), LEASEHOLD_UNSAFE_BUILD (default build/unsafe),
# LEASEHOLD_SELFTEST_SEED (default 7), LEASEHOLD_SELFTEST_DURATION (s, default 8),
# LEASEHOLD_JOBS (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
safe=${LEASEHOLD_CHAOS_BUILD:-$root/build/release}
unsafe=${LEASEHOLD_UNSAFE_BUILD:-$root/build/unsafe}
seed=${LEASEHOLD_SELFTEST_SEED:-7}
duration=${LEASEHOLD_SELFTEST_DURATION:-8}
jobs=${LEASEHOLD_JOBS:-2}
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEHOLD_BUILD_EXAMPLES=OFF -DLEASEHOLD_BUILD_BENCH=OFF)

if [ ! -f "$safe/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$safe" "${common[@]}" -DLEASEHOLD_DEBUG_INFO="${LEASEHOLD_DEBUG_INFO:-full}" >/dev/null
fi
cmake --build "$safe" -j "$jobs" --target leasehold_chaos leasehold_member
# The broken copy takes the safe build's compiler options (warnings, debug
# information): the switch then changes one file's preprocessed source only,
# and ccache serves every other file from the safe build's compiles.
same=()
for option in LEASEHOLD_WERROR LEASEHOLD_DEBUG_INFO; do
  value=$(sed -n "s/^$option:[A-Z]*=//p" "$safe/CMakeCache.txt")
  [ -n "$value" ] && same+=("-D$option=$value")
done
cmake -S "$root" -B "$unsafe" "${common[@]}" "${same[@]}" -DLEASEHOLD_UNSAFE_DEADLINE_FROM_REPLY=ON >/dev/null 2>&1
cmake --build "$unsafe" -j "$jobs" --target leasehold_member leasehold_simulation

runner=("$safe/tests/chaos/leasehold_chaos" --seed "$seed" --duration "$duration" --scenario delayed-replies)
log=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-selftest-XXXXXX")
trap 'rm -rf "$log"' EXIT
mkdir "$log/unsafe" "$log/safe"  # member output of each run, removed with $log

echo "== self-test 1/2: the broken build (deadline from the reply) must fail with overlaps"
set +e
"${runner[@]}" --member "$unsafe/tests/fleet/leasehold_member" --work-dir "$log/unsafe" >"$log/unsafe.txt" 2>&1
unsafe_status=$?
"${runner[@]}" --work-dir "$log/safe" >"$log/safe.txt" 2>&1
safe_status=$?
set -e
grep -E '^(OVERLAP|RESULT|seed )' "$log/unsafe.txt" | head -n 12 || true

echo "== self-test 2/2: the safe build must pass the same schedule (seed $seed)"
grep -E '^(OVERLAP|LATE|GAP|ORDER|CRASH|STOP|RUNNER|RESULT|seed )' "$log/safe.txt" || true

result=0
if [ "$unsafe_status" -eq 0 ] || ! grep -qE '^RESULT: FAIL overlaps=[1-9]' "$log/unsafe.txt"; then
  echo "SELF-TEST FAILED: the broken build was not caught (exit $unsafe_status); its output:"
  cat "$log/unsafe.txt"
  result=1
fi
if [ "$safe_status" -ne 0 ]; then
  echo "SELF-TEST FAILED: the safe build did not pass the same schedule (exit $safe_status); its output:"
  cat "$log/safe.txt"
  result=1
fi
if [ "$result" -eq 0 ]; then
  echo "SELF-TEST PASSED: the checker caught the broken build ($(grep -oE 'overlaps=[0-9]+' "$log/unsafe.txt")) and the safe build passed the same schedule"
fi
echo "== self-test: the simulation must catch the broken build too"
if ! "$unsafe/tests/simulation/leasehold_simulation" --seeds 300 --expect-failure >"$log/simulation.txt" 2>&1; then
  echo "SELF-TEST FAILED: the simulation did not catch the broken build"
  result=1
fi
tail -n 4 "$log/simulation.txt"
exit "$result"
