#!/usr/bin/env bash
# The demo: three cron_digest instances send "the digest" every second through
# the leader-only scheduler (once-per-tick on, misfire run_once). Part-way the
# leader is SIGKILLed; later the new leader is asked to step down (SIGUSR1).
# Prints a timeline of who sent which tick and how long each failover took,
# and a verdict computed from the instances' logs and checked against Redis.
#
# Installs what is missing (scripts/deps.sh), builds cron_digest (reusing
# build/release when it exists), and starts a private redis-server on a free
# loopback port, or uses REDIS_URL (redis://...) when given, under keys of its
# own that it deletes at the end. Takes about 15 s once built, and leaves no
# process behind. Exit status: 0 when the verdict is PASS.
#
# --sentinel: the same digest on a Redis Sentinel deployment (1 master, 2
# replicas, 3 sentinels on free loopback ports, scripts/demo-sentinel.sh),
# the instances using its redis-sentinel:// URL; the master is SIGKILLed:
# the leader is demoted at once and the group is leaderless until Sentinel
# promotes a replica (about 2.3 s), the misfire policy covering the gap.
# --sentinel --planned first runs SENTINEL FAILOVER under the digest. Its
# verdict fails on purpose: the old master accepts the leader's writes until
# the first +switch-master, about 1 s after the promotion, and a digest sent
# then is lost (docs/sentinel.md: application writes need their own WAIT).
set -euo pipefail
sentinel="" planned=""
for arg in "$@"; do
  case "$arg" in
    --sentinel) sentinel=1 ;;
    --planned) planned=1 ;;
    *) echo "usage: $0 [--sentinel [--planned]]" >&2; exit 2 ;;
  esac
done
[ -z "$planned" ] || [ -n "$sentinel" ] || { echo "demo: --planned needs --sentinel" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LEASEHOLD_BUILD_DIR:-$root/build/release}
jobs=${LEASEHOLD_JOBS:-$(nproc)}

interval=1000 ttl=2000 grace=1500 policy=run_once
instances=3

work=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-demo.XXXXXX")
declare -A pid_of=()
redis_pid=""
redis_pids=()
cleanup() {
  local status=$?
  for p in "${pid_of[@]}" $redis_pid "${redis_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${REDIS_URL:-}" ] && [ -n "${prefix:-}" ]; then
    rcli DEL "${prefix}digest" "${prefix}digest:token" "${prefix}digest:ticks" "${prefix}default" \
      "${prefix}default:token" "$list" >/dev/null 2>&1 || true
  fi
  if [ "$status" -eq 0 ] && [ -z "${DEMO_KEEP:-}" ]; then rm -rf "$work"; else echo "logs kept in $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$root/scripts/deps.sh"
# Reuse the build directory of scripts/test.sh; configure it only when needed.
if ! ninja -C "$build" -t targets all 2>/dev/null | grep -q '^cron_digest:'; then
  build_type=()
  [ -f "$build/CMakeCache.txt" ] || build_type=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  cmake -S "$root" -B "$build" -G Ninja -DLEASEHOLD_BUILD_EXAMPLES=ON "${build_type[@]}" > "$work/build.log" 2>&1 ||
    { cat "$work/build.log"; exit 1; }
fi
echo "demo: building cron_digest in $build"
cmake --build "$build" --target cron_digest -j "$jobs" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
bin=$build/examples/cron_digest/cron_digest

now_ms() { date +%s%3N; }
# Polls a command every 50 ms until it succeeds or $1 seconds pass.
wait_until() {
  local deadline=$(( $(now_ms) + $1 * 1000 )); shift
  until "$@"; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
# Sleeps until $1 ms past a tick, so that signals never race a send.
sleep_to_phase() {
  local phase=$(( $(now_ms) % interval ))
  local ms=$(( ($1 - phase + interval) % interval ))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
}
say() { echo "$1 t=${2:-$(now_ms)}" >> "$work/demo.log"; }

# ---- Redis ----------------------------------------------------------------------
if [ -n "$sentinel" ]; then
  . "$root/scripts/demo-sentinel.sh"
  start_sentinel_topology
  rcli() { redis-cli -p "$(master_port)" "$@"; }
  prefix="leader:" list="digest:sent"
  where="Sentinel: master 127.0.0.1:${node_ports[0]}, replicas :${node_ports[1]} :${node_ports[2]}, sentinels :${sentinel_ports[0]} :${sentinel_ports[1]} :${sentinel_ports[2]}
url:   $url"
elif [ -n "${REDIS_URL:-}" ]; then
  url=$REDIS_URL
  rcli() { redis-cli -u "$url" "$@"; }
  prefix="demo$$:leader:" list="demo$$:digest:sent"
  where="REDIS_URL (keys under demo$$:)"
else
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    port=$(( 20000 + RANDOM % 40000 ))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
      --logfile "$work/redis.log" >/dev/null 2>&1 &
    redis_pid=$!
    if wait_until 5 sh -c "redis-cli -p $port PING 2>/dev/null | grep -q PONG || ! kill -0 $redis_pid 2>/dev/null" \
        && kill -0 "$redis_pid" 2>/dev/null; then
      break
    fi
    kill -KILL "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
    [ "$attempt" -lt 10 ] || { echo "demo: could not start redis-server (see $work/redis.log)" >&2; exit 1; }
  done
  url="redis://127.0.0.1:$port"
  rcli() { redis-cli -p "$port" "$@"; }
  prefix="leader:" list="digest:sent"
  where="private redis-server on 127.0.0.1:$port"
fi
group=digest

echo
echo "leasehold demo: $instances cron_digest instances send a digest every $interval ms through the"
echo "leader-only scheduler (once-per-tick on, misfire $policy within $grace ms); lease ttl $ttl ms"
echo "redis: $where"
echo

# ---- the story ----------------------------------------------------------------------
start=$(now_ms)
for i in $(seq 1 "$instances"); do
  "$bin" --url "$url" --id "instance-$i" --interval-ms "$interval" --ttl-ms "$ttl" --misfire "$policy" \
    --grace-ms "$grace" --prefix "$prefix" --list "$list" > "$work/instance-$i.log" 2> "$work/instance-$i.err" &
  pid_of[instance-$i]=$!
done

leader() { rcli GET "$prefix$group" 2>/dev/null; }
has_leader() { [ -n "$(leader)" ]; }
sent_count() { cat "$work"/instance-*.log | grep -c '^sent ' || true; }
sent_at_least() { [ "$(sent_count)" -ge "$1" ]; }
elected_after() { grep -h '^elected ' "$work"/instance-*.log | awk -v t="$1" '{ sub("t=", "", $NF); if ($NF + 0 >= t) found = 1 } END { exit !found }'; }
fail() { echo "demo: $1" >&2; for f in "$work"/instance-*.log; do echo "--- $f"; tail -5 "$f"; done >&2; exit 1; }

wait_until 10 has_leader || fail "no instance became leader within 10 s"
wait_until 10 sent_at_least 3 || fail "the leader did not send 3 digests within 10 s"

victim=""  # the instance SIGKILLed, if any
if [ -n "$planned" ]; then
  # 1. A planned failover: the leader should follow +switch-master to the new
  #    master and keep its term, losing no tick and repeating none.
  sleep_to_phase 450
  planned_leader=$(leader)
  old_master=$(master_port)
  say "planned instance=$planned_leader port=$old_master"
  sentinel_failover || fail "SENTINEL FAILOVER was refused"
  wait_until 20 master_moved_from "$old_master" || fail "the sentinels did not promote a replica within 20 s"
  say "switched port=$(master_port)"
  # The sentinels turn the old master into a replica some seconds later.
  wait_until 30 topology_settled || fail "the topology did not settle after the failover"
  say "settled port=$(master_port)"
  wait_until 10 sent_at_least $(( $(sent_count) + 2 )) || fail "no digest after the planned failover"
fi
if [ -n "$sentinel" ]; then
  # 2. (or 1.) The master dies: every connection is lost, the leader is demoted at
  #    once, and the group is leaderless until Sentinel promotes a replica.
  sleep_to_phase 450
  victim_master=$(master_port)
  killed_at=$(now_ms)
  say "master_kill instance=$(leader) port=$victim_master" "$killed_at"
  disown "${pid_of_port[$victim_master]}"  # no "Killed" job notice in the output
  kill_master_port "$victim_master"
  wait_until 20 elected_after "$killed_at" || fail "nobody was elected on the promoted replica within 20 s"
  say "switched port=$(master_port)"
  wait_until 10 sent_at_least $(( $(sent_count) + 3 )) || fail "the new leader did not send"
else
  # 1. The leader dies without releasing its lease: the group is leaderless until it expires.
  sleep_to_phase 450
  victim=$(leader)
  [ -n "${pid_of[$victim]:-}" ] || fail "no leader to kill"
  killed_at=$(now_ms)
  say "kill instance=$victim" "$killed_at"
  disown "${pid_of[$victim]}"  # no "Killed" job notice in the output
  kill -KILL "${pid_of[$victim]}"
  wait_until $(( ttl / 1000 + 5 )) elected_after "$killed_at" || fail "nobody took over within ttl + 5 s"
  wait_until 10 sent_at_least 7 || fail "the new leader did not send"

  # 2. The new leader steps down: a standby takes over at once, no tick lost.
  sleep_to_phase 450
  stepper=$(leader)
  [ -n "${pid_of[$stepper]:-}" ] || fail "no leader to step down"
  asked_at=$(now_ms)
  say "usr1 instance=$stepper" "$asked_at"
  kill -USR1 "${pid_of[$stepper]}"
  wait_until 5 elected_after "$asked_at" || fail "nobody took over after the step-down"
  wait_until 10 sent_at_least 10 || fail "the third leader did not send"
fi

# 3. Graceful stop: standbys first, then the leader, so nobody takes over meanwhile.
sleep_to_phase 450
last_leader=$(leader)
[ -n "${pid_of[$last_leader]:-}" ] || fail "no leader at the end"
for id in "${!pid_of[@]}"; do
  if [ "$id" != "$victim" ] && [ "$id" != "$last_leader" ]; then kill -TERM "${pid_of[$id]}"; fi
done
for id in "${!pid_of[@]}"; do
  if [ "$id" != "$victim" ] && [ "$id" != "$last_leader" ]; then wait "${pid_of[$id]}" || true; fi
done
kill -TERM "${pid_of[$last_leader]}"
wait "${pid_of[$last_leader]}" || true
pid_of=()

# ---- the verdict ------------------------------------------------------------------
{
  rcli LRANGE "$list" 0 -1 | sed 's/^/list /'
  echo "record $(rcli HGET "$prefix$group:ticks" "every ${interval}ms")"
} > "$work/redis.txt"
cat "$work/demo.log" "$work"/instance-*.log |
  awk '{ t = $NF; sub("t=", "", t); print t, $0 }' | sort -n -s -k1,1 > "$work/events.txt"
# A master kill is over when Sentinel has promoted a replica (down-after 1 s,
# then the vote and the promotion: about 2.3 s) and a member was elected there.
awk -v start="$start" -v interval="$interval" -v ttl="$ttl" -v grace="$grace" -v policy="$policy" \
  -v list="$list" -v master_bound=5000 -v expect_failovers="${sentinel:+1}" \
  -f "$root/scripts/demo-verdict.awk" "$work/redis.txt" "$work/events.txt"
