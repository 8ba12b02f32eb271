# Sourced by demo.sh --sentinel: a Redis Sentinel deployment on free loopback
# ports (1 master + 2 replicas + 3 sentinels, master name "leasehold",
# down-after 1000 ms, failover-timeout 3000 ms), started with the installed
# redis-server in $work. Every process goes into redis_pids, which demo.sh's
# cleanup kills. Needs $work, wait_until and now_ms from demo.sh.

sentinel_name=leasehold
node_ports=() sentinel_ports=() redis_pids=()
declare -A pid_of_port=()

# Starts redis-server with a config file $1 (its "port" line filled in) on a
# free random port; sets started_port. Extra arguments go to redis-server.
start_on_free_port() {
  local conf=$1; shift
  local attempt port pid
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    port=$(( 20000 + RANDOM % 40000 ))
    sed -i "s/^port .*/port $port/" "$conf"
    redis-server "$conf" "$@" >/dev/null 2>&1 &
    pid=$!
    if wait_until 5 sh -c "redis-cli -p $port PING 2>/dev/null | grep -q PONG || ! kill -0 $pid 2>/dev/null" \
        && kill -0 "$pid" 2>/dev/null; then
      redis_pids+=("$pid"); pid_of_port[$port]=$pid; started_port=$port
      return 0
    fi
    kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  echo "demo: could not start redis-server with $conf (see its log in $work)" >&2
  return 1
}

start_node() {  # $1: index; $2: the master's port, or empty for the master
  local dir=$work/node-$1
  mkdir -p "$dir"
  {
    echo "port 0"; echo "bind 127.0.0.1"; echo "save \"\""; echo "appendonly no"
    echo "dir $dir"; echo "logfile $dir/redis.log"; echo "repl-diskless-sync-delay 0"
    [ -z "$2" ] || echo "replicaof 127.0.0.1 $2"
  } > "$dir/redis.conf"
  start_on_free_port "$dir/redis.conf"
  node_ports+=("$started_port")
}

start_sentinel() {  # $1: index; $2: the master's port
  local dir=$work/sentinel-$1
  mkdir -p "$dir"
  cat > "$dir/sentinel.conf" <<EOF
port 0
bind 127.0.0.1
dir $dir
logfile $dir/sentinel.log
sentinel resolve-hostnames no
sentinel monitor $sentinel_name 127.0.0.1 $2 2
sentinel down-after-milliseconds $sentinel_name 1000
sentinel failover-timeout $sentinel_name 3000
sentinel parallel-syncs $sentinel_name 1
EOF
  start_on_free_port "$dir/sentinel.conf" --sentinel
  sentinel_ports+=("$started_port")
}

# A field of SENTINEL MASTER (flat field/value lines) from sentinel port $1.
sentinel_field() {
  redis-cli -p "$1" SENTINEL MASTER "$sentinel_name" 2>/dev/null | awk -v k="$2" 'NR % 2 == 1 && $0 == k { getline; print }'
}
# Every sentinel sees one master, 2 replicas and the 2 other sentinels.
topology_settled() {
  local s
  for s in "${sentinel_ports[@]}"; do
    [ "$(sentinel_field "$s" flags)" = master ] || return 1
    [ "$(sentinel_field "$s" num-slaves)" = 2 ] || return 1
    [ "$(sentinel_field "$s" num-other-sentinels)" = 2 ] || return 1
  done
  # ... and the master has both replicas attached (after a failover the old
  # master is converted seconds later).
  redis-cli -p "$(master_port)" INFO replication 2>/dev/null | grep -q '^connected_slaves:2'
}
replica_linked() { redis-cli -p "$1" INFO replication 2>/dev/null | grep -q '^master_link_status:up'; }

start_sentinel_topology() {
  start_node 0 ""
  start_node 1 "${node_ports[0]}"
  start_node 2 "${node_ports[0]}"
  wait_until 15 replica_linked "${node_ports[1]}" && wait_until 15 replica_linked "${node_ports[2]}" ||
    { echo "demo: the replicas did not attach (see $work/node-*/redis.log)" >&2; return 1; }
  local j
  for j in 0 1 2; do start_sentinel "$j" "${node_ports[0]}"; done
  wait_until 20 topology_settled || { echo "demo: the sentinels did not settle (see $work/sentinel-*/sentinel.log)" >&2; return 1; }
  url="redis-sentinel://127.0.0.1:${sentinel_ports[0]},127.0.0.1:${sentinel_ports[1]},127.0.0.1:${sentinel_ports[2]}#$sentinel_name"
}

# The master's port as the first sentinel that answers names it.
master_port() {
  local s port
  for s in "${sentinel_ports[@]}"; do
    port=$(redis-cli -p "$s" SENTINEL GET-MASTER-ADDR-BY-NAME "$sentinel_name" 2>/dev/null | sed -n 2p)
    if [ -n "$port" ]; then echo "$port"; return 0; fi
  done
  return 1
}
# Every sentinel names a master other than port $1, and it says it is one.
master_moved_from() {
  local s port
  for s in "${sentinel_ports[@]}"; do
    port=$(redis-cli -p "$s" SENTINEL GET-MASTER-ADDR-BY-NAME "$sentinel_name" 2>/dev/null | sed -n 2p)
    [ -n "$port" ] && [ "$port" != "$1" ] || return 1
  done
  redis-cli -p "$port" ROLE 2>/dev/null | head -1 | grep -q '^master$'
}
sentinel_failover() { redis-cli -p "${sentinel_ports[0]}" SENTINEL FAILOVER "$sentinel_name" | grep -q '^OK$'; }
kill_master_port() { kill -KILL "${pid_of_port[$1]}"; }
