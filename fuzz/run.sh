#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build/fuzz) and runs each one,
# starting from its regression corpus in fuzz/corpus/<target>/.
#
#   fuzz/run.sh               every target for 30 s, random seed
#   fuzz/run.sh 120           every target for 120 s, random seed
#   fuzz/run.sh 0             regression only: each corpus file once
#   fuzz/run.sh ci            CI: the corpus once, then a fixed-seed pass of a
#                             fixed number of runs (same verdict every time)
#   fuzz/run.sh 60 url_fuzzer one target
#
# Environment: LEASEHOLD_FUZZ_BUILD_DIR (default build/fuzz),
# LEASEHOLD_FUZZ_JOBS (build parallelism, default 2), LEASEHOLD_FUZZ_SEED and
# LEASEHOLD_FUZZ_RUNS (the ci mode's seed and run count, default 1 and 20000),
# LEASEHOLD_DEBUG_INFO (full or lines, default full; see
# cmake/LeaseholdDebugInfo.cmake), LEASEHOLD_PHASE (build: build the targets
# and stop; test: run an existing build; default: both).
# New inputs go to <build>/corpus/<target>/ (the repository corpus is only
# read); a crash is saved as <build>/artifacts/<target>-crash-* and fails the
# script. To keep a finding as a regression input, copy it into
# fuzz/corpus/<target>/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LEASEHOLD_FUZZ_BUILD_DIR:-$root/build/fuzz}
jobs=${LEASEHOLD_FUZZ_JOBS:-2}
seconds=${1:-30}
shift || true
targets=("$@")
phase=${LEASEHOLD_PHASE:-all}

if [ "$phase" != test ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLEASEHOLD_BUILD_FUZZ=ON -DLEASEHOLD_BUILD_TESTS=OFF -DLEASEHOLD_BUILD_EXAMPLES=OFF \
    -DLEASEHOLD_BUILD_BENCH=OFF -DLEASEHOLD_BUILD_TOOLS=OFF -DLEASEHOLD_INSTALL=OFF \
    -DLEASEHOLD_WERROR=ON -DLEASEHOLD_DEBUG_INFO=${LEASEHOLD_DEBUG_INFO:-full} >/dev/null
fi
if [ ${#targets[@]} -eq 0 ]; then
  for dir in "$root"/fuzz/corpus/*/; do
    name=$(basename "$dir")
    # A target whose source is not there yet is skipped.
    [ -f "$root/fuzz/$name.cpp" ] && targets+=("$name")
  done
fi
[ "$phase" = test ] || cmake --build "$build" -j "$jobs" --target "${targets[@]}"
[ "$phase" = build ] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
max_len() {
  case "$1" in
    reply_fuzzer) echo 4096 ;;
    *) echo 512 ;;
  esac
}

ci_seed=${LEASEHOLD_FUZZ_SEED:-1}
ci_runs=${LEASEHOLD_FUZZ_RUNS:-20000}
status=0
for t in "${targets[@]}"; do
  bin=$(find "$build" -name "$t" -type f -perm -u+x | head -n 1)
  seeds="$root/fuzz/corpus/$t"
  mkdir -p "$build/corpus/$t" "$build/artifacts"
  log="$build/$t.log"
  rc=0
  if [ "$seconds" = ci ]; then
    # New inputs go to a scratch directory that starts empty, so the run
    # depends on the repository corpus, the seed and the run count only.
    echo "== $t (corpus, then seed $ci_seed for $ci_runs runs)"
    scratch=$(mktemp -d)
    "$bin" -runs=0 "$seeds" >"$log" 2>&1 &&
      "$bin" -seed="$ci_seed" -runs="$ci_runs" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$scratch" "$seeds" >>"$log" 2>&1 || rc=$?
    rm -rf "$scratch"
  elif [ "$seconds" -eq 0 ]; then
    echo "== $t (corpus only)"
    "$bin" -runs=0 "$seeds" >"$log" 2>&1 || rc=$?
  else
    echo "== $t (${seconds} s)"
    "$bin" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
      "$build/corpus/$t" "$seeds" >"$log" 2>&1 || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    status=1
    echo "!! $t failed (exit $rc); see $log"
    tail -n 60 "$log"
  else
    grep -E "^(#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
  fi
done
exit $status
