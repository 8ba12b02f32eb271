#!/usr/bin/env bash
# Exploration outside CI: random-seed fuzzing and chaos for a given time.
# Each finding is printed with the command that replays it; turn it into a
# corpus entry (fuzz/corpus/<target>/) or a test before fixing it, so that CI
# (which only replays fixed seeds and the kept corpus) guards it from then on.
#
#   scripts/explore.sh                 10 minutes: half fuzzing, half chaos
#   scripts/explore.sh 3600            an hour
#   scripts/explore.sh 600 fuzz|chaos  only one kind
#
# Environment: LEASEHOLD_BUILD_DIR (the chaos build, default build/release),
# LEASEHOLD_EXPLORE_CHAOS_S (one chaos run's length, default 60).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
total=${1:-600}
only=${2:-}
build=${LEASEHOLD_BUILD_DIR:-$root/build/release}
chaos_run=${LEASEHOLD_EXPLORE_CHAOS_S:-60}
findings=0

case "$only" in
  "") fuzz_share=$(( total / 2 )); chaos_share=$(( total - fuzz_share )) ;;
  fuzz) fuzz_share=$total; chaos_share=0 ;;
  chaos) fuzz_share=0; chaos_share=$total ;;
  *) echo "usage: $0 [seconds] [fuzz|chaos]" >&2; exit 2 ;;
esac

if [ "$fuzz_share" -gt 0 ]; then
  targets=()
  for dir in "$root"/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
  per_target=$(( fuzz_share / ${#targets[@]} ))
  [ "$per_target" -lt 10 ] && per_target=10
  echo "== fuzzing ${#targets[@]} targets, ${per_target} s each, random seeds"
  fuzz_build=${LEASEHOLD_FUZZ_BUILD_DIR:-$root/build/fuzz}
  before=$(ls "$fuzz_build"/artifacts 2>/dev/null | sort)
  if ! "$root/fuzz/run.sh" "$per_target"; then
    for crash in $(comm -13 <(echo "$before") <(ls "$fuzz_build"/artifacts | sort)); do
      target=${crash%%-*}
      bin=$(find "$fuzz_build" -name "$target" -type f -perm -u+x | head -n 1)
      echo "FINDING fuzz $target: replay: $bin $fuzz_build/artifacts/$crash"
      echo "  keep it: cp $fuzz_build/artifacts/$crash $root/fuzz/corpus/$target/"
      findings=$((findings + 1))
    done
  fi
fi

if [ "$chaos_share" -gt 0 ]; then
  cmake --build "$build" -j "${LEASEHOLD_JOBS:-2}" --target leasehold_chaos leasehold_member >/dev/null
  runner="$build/tests/chaos/leasehold_chaos"
  end=$(( $(date +%s) + chaos_share ))
  while [ "$(date +%s)" -lt "$end" ]; do
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    echo "== chaos: seed $seed, ${chaos_run} s"
    log=$(mktemp)
    if ! "$runner" --seed "$seed" --duration "$chaos_run" >"$log" 2>&1; then
      grep -E "^(OVERLAP|LATE|GAP|ORDER|CRASH|STOP|RESULT)" "$log" | head -20
      echo "FINDING chaos seed $seed: replay: $runner --seed $seed --duration $chaos_run (log: $log)"
      echo "  keep it: add the seed to LEASEHOLD_CHAOS_SEEDS in tests/chaos/ci.sh once it is fixed, or a test"
      findings=$((findings + 1))
    else
      grep -E "^RESULT" "$log"
      rm -f "$log"
    fi
  done
fi

echo "== explore: $findings finding(s)"
[ "$findings" -eq 0 ]
