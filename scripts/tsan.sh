#!/usr/bin/env bash
# ThreadSanitizer: configures build/tsan with -DLEASEHOLD_SANITIZE=thread,
# builds the integration tests and runs the ones that drive the elector from
# several threads (standalone mode's own threads, is_leader readers during
# renewals, stop and destruction from other threads, multi-threaded
# io_contexts). Any data race fails the run.
#
#   scripts/tsan.sh                 the default selection (a few minutes on 2 cores)
#   scripts/tsan.sh 'Threading\.'   a ctest -R regex of your own
#
# Environment: LEASEHOLD_TSAN_BUILD_DIR (default build/tsan), LEASEHOLD_JOBS
# (default 2), LEASEHOLD_DEBUG_INFO (full or lines, default full; see
# cmake/LeaseholdDebugInfo.cmake), LEASEHOLD_PHASE (build: stop after the
# build; test: only run the tests of an existing build; default: both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LEASEHOLD_TSAN_BUILD_DIR:-$root/build/tsan}
jobs=${LEASEHOLD_JOBS:-2}
default_tests='^(Threading|Lifecycle|Elector|LeaderOnly|RunWhileLeader|Drain|Scheduler|Health|Metrics)\.'
regex=${1:-$default_tests}
phase=${LEASEHOLD_PHASE:-all}

if [ "$phase" != test ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLEASEHOLD_SANITIZE=thread -DLEASEHOLD_WERROR=ON -DLEASEHOLD_DEBUG_INFO=${LEASEHOLD_DEBUG_INFO:-full} \
    -DLEASEHOLD_BUILD_EXAMPLES=OFF -DLEASEHOLD_BUILD_BENCH=OFF -DLEASEHOLD_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target leasehold_integration_tests
fi
[ "$phase" = build ] && exit 0

# halt_on_error: the first race fails its test. second_deadlock_stack: both
# stacks of a lock-order inversion. tsan.supp: third-party false positives.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$root/scripts/tsan.supp}
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 300 -R "$regex"
