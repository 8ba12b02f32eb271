#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds and runs
# every test. Extra CMake arguments may be passed in LEASEHOLD_CMAKE_ARGS and a
# build directory in LEASEHOLD_BUILD_DIR (default: build/release), the build's
# parallelism in LEASEHOLD_JOBS (the cores) and the tests' in
# LEASEHOLD_TEST_JOBS (three times that);
# LEASEHOLD_DEBUG_INFO is lines by default (-g1: faster builds, file:line in
# backtraces; as CI builds), full for a debugger's variables and types (see
# cmake/LeaseholdDebugInfo.cmake). LEASEHOLD_PHASE=build stops after
# the build, LEASEHOLD_PHASE=test only runs the tests of an existing build (CI
# builds the sanitizer builds while other steps run their tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LEASEHOLD_BUILD_DIR:-$root/build/release}
jobs=${LEASEHOLD_JOBS:-$(nproc)}
# Three times as many tests as cores: most wait on timers (the whole run
# keeps a third of one core busy); those that start a Cluster, a Sentinel
# set-up or a fleet of processes count twice (cmake/LeaseholdHeavyTests.cmake).
test_jobs=${LEASEHOLD_TEST_JOBS:-$((3 * jobs))}
phase=${LEASEHOLD_PHASE:-all}

if [ "$phase" != test ]; then
  "$root/scripts/deps.sh"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${LEASEHOLD_BUILD_TYPE:-RelWithDebInfo} \
    -DLEASEHOLD_DEBUG_INFO=${LEASEHOLD_DEBUG_INFO:-lines} \
    ${LEASEHOLD_CMAKE_ARGS:-}
  cmake --build "$build" -j "$jobs"
fi
[ "$phase" = build ] && exit 0
ctest --test-dir "$build" --output-on-failure -j "$test_jobs" --timeout 300 ${LEASEHOLD_CTEST_ARGS:-}
