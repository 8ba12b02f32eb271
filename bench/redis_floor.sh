#!/usr/bin/env bash
# What Redis itself spends to extend one key among many, with no leasehold in
# the way: the floor under "Redis CPU per renewal" (bench/scale). A private
# redis-server on a free loopback port holds --keys string keys with a TTL;
# redis-benchmark then sends each shape below and the server's own CPU
# (INFO cpu, user + sys) is divided by the keys it touched.
#
#   bench/redis_floor.sh [--keys 100000] [--runs 2] [--batch 64]
#
# Shapes: bare PEXPIRE, pipelined (no script, no check: less than any lease
# renewal can do); a script doing PEXPIRE per key; one MGET then PEXPIRE per
# key whose value matches (the lean renewal's shape); a script touching no
# key. "cold": each key drawn at random among --keys; "hot": the same --batch
# keys again and again (they stay in the CPU's cache).
set -euo pipefail

keys=100000 runs=2 batch=64
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keys) keys="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    *) echo "redis_floor.sh: unknown option '$1' (--keys N, --runs N, --batch N)" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-cli redis-benchmark python3; do
  command -v "$tool" >/dev/null || { echo "redis_floor.sh: $tool not found (apt install redis-server redis-tools python3)" >&2; exit 2; }
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --logfile "$dir/redis.log" --daemonize yes --pidfile "$dir/redis.pid"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

prefix="leasehold:bench-floor:group:"
value="member-0123456789abcdef"
python3 - "$keys" "$prefix" "$value" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
count, prefix, value = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for i in range(count):
    key = "%s%012d" % (prefix, i)
    sys.stdout.write("*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$9\r\n900000000\r\n" % (len(key), key, len(value), value))
PY

cpu() { redis-cli -p "$port" info cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'; }
cold_keys=() hot_keys=()
for i in $(seq 0 $((batch - 1))); do
  cold_keys+=("${prefix}__rand_int__")
  hot_keys+=("$(printf '%s%012d' "$prefix" "$i")")
done
requests=$((1280000 / batch))

# per_key <label> <keys per request> <requests> <redis-benchmark arguments...>
per_key() {
  local label=$1 touched=$2 n=$3
  shift 3
  local before after
  before=$(cpu)
  redis-benchmark -p "$port" -q -c 2 -r "$keys" -n "$n" "$@" >/dev/null
  after=$(cpu)
  printf '| %s | %s |\n' "$label" "$(python3 -c "print(f'{($after - $before) / ($n * $touched) * 1e6:.2f}')")"
}

pexpire_each="for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end return 1"
lean_renewal="local values = redis.call('MGET', unpack(KEYS))
for i = 1, #KEYS do if values[i] == ARGV[1] then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end end
return 1"
sha_each=$(redis-cli -p "$port" script load "$pexpire_each")
sha_lean=$(redis-cli -p "$port" script load "$lean_renewal")
sha_none=$(redis-cli -p "$port" script load "return 1")

echo "Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $keys keys, batches of $batch, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| shape | Redis CPU per key, µs |"
echo "| --- | ---: |"
for run in $(seq "$runs"); do
  per_key "run $run: PEXPIRE, pipelined by $batch, cold" 1 1280000 -P "$batch" PEXPIRE "${prefix}__rand_int__" 900000000
  per_key "run $run: PEXPIRE, pipelined by $batch, hot" 1 1280000 -P "$batch" -r "$batch" PEXPIRE "${prefix}__rand_int__" 900000000
  per_key "run $run: script, PEXPIRE per key, cold" "$batch" "$requests" EVALSHA "$sha_each" "$batch" "${cold_keys[@]}" "$value" 900000000
  per_key "run $run: script, MGET then PEXPIRE per key, cold" "$batch" "$requests" EVALSHA "$sha_lean" "$batch" "${cold_keys[@]}" "$value" 900000000
  per_key "run $run: script, MGET then PEXPIRE per key, hot" "$batch" "$requests" EVALSHA "$sha_lean" "$batch" "${hot_keys[@]}" "$value" 900000000
  per_key "run $run: script touching no key, $batch key names" "$batch" "$requests" EVALSHA "$sha_none" "$batch" "${cold_keys[@]}" "$value" 900000000
done
