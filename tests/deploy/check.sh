#!/usr/bin/env bash
# Tests the deployment guide (docs/deployment.md) against the example it
# deploys, examples/metrics_server:
#   1. parses the Kubernetes manifests in deploy/kubernetes/ (python3-yaml)
#      and checks that the probe paths are the ones the example serves for
#      liveness and readiness, that probes and --listen use the container's
#      port, that terminationGracePeriodSeconds (less any preStop sleep) is at
#      least drain_timeout + stop_timeout (the example sets neither, so the
#      defaults of include/leasehold/elector_options.hpp apply), that every
#      command-line flag is one the example parses, that the Redis URL comes
#      from the environment variable the example reads, that a Deployment
#      passes no fixed --id and a StatefulSet passes its pod name;
#   2. checks the systemd unit in deploy/systemd/ the same way
#      (TimeoutStopSec, KillSignal, Restart, ExecStart's flags), and runs
#      `systemd-analyze verify` on it when that tool works here (skipped with
#      a message otherwise);
#   3. runs the example with the command line of the unit and of each
#      manifest (--listen moved to 127.0.0.1 and a free port, $(POD_NAME)
#      given a value) against a private redis-server on a free loopback port:
#      liveness and readiness answer 200 (within 30 s), the instance leads
#      its groups, SIGTERM ends it with status 0 within drain_timeout +
#      stop_timeout and its leases are released. With the StatefulSet's
#      command line it also checks that the lease holds the pod name, that a
#      second process with the same id leaves the lease alone and that both
#      are not ready while they run together, and that with Redis
#      frozen (SIGSTOP) readiness fails while liveness holds and SIGTERM still
#      ends the process within the bound.
# Everything runs in a temporary directory, removed on exit with every
# process it started. Takes about 15 s. Exits 0 on success.
#
#   tests/deploy/check.sh [BUILD_DIR]      (default: build/release)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
work=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-deploy.XXXXXX")
redis_pid=""
app_pids=()

cleanup() {
  local pid
  for pid in "${app_pids[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "$redis_pid" ]; then
    kill -CONT "$redis_pid" 2>/dev/null || true
    kill -9 "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { echo "== deploy: $*"; }
fail() { echo "deployment check FAILED: $*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ---------------------------------------------------------------- 1 and 2: the files

step "manifests and unit against examples/metrics_server"
# The first python3 that has the yaml module: the one on PATH (which may be a
# private installation), else Debian's, where python3-yaml puts it.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import yaml" 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || fail "no python3 with the yaml module (Debian: python3-yaml; scripts/deps.sh installs it)"
"$python" - "$root" "$work" <<'PYTHON'
import glob
import math
import os
import re
import shlex
import sys

try:
    import yaml
except ImportError:
    print("the python3 module yaml is missing (Debian: python3-yaml; scripts/deps.sh installs it)")
    sys.exit(1)

root, work = sys.argv[1], sys.argv[2]
os.chdir(root)
problems = []


def problem(where, message):
    problems.append(f"{where}: {message}")


# ---- what the example does, from its source
EXAMPLE = "examples/metrics_server/main.cpp"
source = open(EXAMPLE, encoding="utf-8").read()
flags = set(re.findall(r'flag == "(--[\w-]+)"', source))
served = set(re.findall(r'target == "(/[^"]*)"', source))
probe_paths = {kind: path for path, kind in re.findall(r"GET\s+(/\S+)\s+.*\((liveness|readiness) probe\)", source)}
listen_match = re.search(r'std::string listen = "([^"]+)"', source)
env_match = re.search(r'getenv\("(\w+)"\)', source)
if not flags or "--listen" not in flags or "--id" not in flags:
    problem(EXAMPLE, f"cannot read the flags it parses (found {sorted(flags)}): teach tests/deploy/check.sh")
if set(probe_paths) != {"liveness", "readiness"} or not set(probe_paths.values()) <= served:
    problem(EXAMPLE, f"cannot read its liveness and readiness paths (comment: {probe_paths}, served: {sorted(served)})")
if not listen_match or not env_match:
    problem(EXAMPLE, "cannot read its default listen address or the environment variable of its URL")
if re.search(r"drain_timeout|stop_timeout", source):
    problem(EXAMPLE, "sets drain_timeout or stop_timeout itself: teach tests/deploy/check.sh to read them")
default_listen = listen_match.group(1) if listen_match else "127.0.0.1:9464"
url_env = env_match.group(1) if env_match else "LEASEHOLD_URL"

# ---- the stop bound, from the option defaults
HEADER = "include/leasehold/elector_options.hpp"
header = open(HEADER, encoding="utf-8").read()
timeouts = {}
for name in ("drain_timeout", "stop_timeout"):
    m = re.search(rf"std::chrono::milliseconds\s+{name}\s*\{{(\d+)\}}\s*;", header)
    if not m:
        problem(HEADER, f"cannot read the default of {name}: teach tests/deploy/check.sh")
    timeouts[name] = int(m.group(1)) if m else 0
bound_ms = timeouts["drain_timeout"] + timeouts["stop_timeout"]
print(f"  example: flags {' '.join(sorted(flags))}; liveness {probe_paths.get('liveness')}, "
      f"readiness {probe_paths.get('readiness')}; URL from ${url_env}; listens on {default_listen} by default")
print(f"  stop bound: drain_timeout {timeouts['drain_timeout']} ms + stop_timeout {timeouts['stop_timeout']} ms "
      f"= {bound_ms} ms ({HEADER} defaults)")


def split_listen(value):
    host, _, port = value.rpartition(":")
    return host, int(port) if port.isdigit() else None


def check_args(where, args):
    """The example's flags, each with a value; returns {flag: [values]}."""
    values = {}
    i = 0
    while i < len(args):
        flag = args[i]
        if flag not in flags:
            problem(where, f"{flag!r}: not a flag of {EXAMPLE} (it parses {', '.join(sorted(flags))})")
        if i + 1 >= len(args) or args[i + 1].startswith("--"):
            problem(where, f"{flag} needs a value")
            i += 1
            continue
        values.setdefault(flag, []).append(args[i + 1])
        i += 2
    return values


def run_args(args, values):
    """The command line to run here: --listen on loopback and a free port,
    --url (if any) pointed at the private server."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "--listen" and i + 1 < len(args):
            out += ["--listen", "127.0.0.1:0"]
            i += 2
        elif args[i] == "--url" and i + 1 < len(args):
            out += ["--url", "@REDIS_URL@"]
            i += 2
        else:
            out.append(args[i])
            i += 1
    if "--listen" not in values:
        out += ["--listen", "127.0.0.1:0"]
    return out


runs = []  # (name, what, args to run, fixed instance id or "")


def add_run(name, what, args, values):
    ids = values.get("--id", [])
    runs.append((name, what, run_args(args, values), ids[-1] if ids else ""))


# ---- the systemd unit
def parse_unit(path):
    sections, section = {}, None
    for number, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            sections.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if not sep or section is None:
            problem(f"{path}:{number}", f"cannot read {line!r}")
            continue
        sections[section].setdefault(key.strip(), []).append(value.strip())
    return sections


def timespan_ms(text):
    """A systemd time span ("15", "15s", "1min 30s", "500ms") in ms; None if unreadable."""
    units = {"us": 0.001, "usec": 0.001, "ms": 1, "msec": 1, "": 1000, "s": 1000, "sec": 1000,
             "second": 1000, "seconds": 1000, "m": 60000, "min": 60000, "minute": 60000,
             "minutes": 60000, "h": 3600000, "hr": 3600000, "hour": 3600000, "hours": 3600000}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text.strip())
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([a-z]*)|\s", "", text):
        return None
    total = 0.0
    for number, unit in parts:
        if unit not in units:
            return None
        total += float(number) * units[unit]
    return total


units = sorted(glob.glob("deploy/systemd/*.service"))
if not units:
    problem("deploy/systemd", "no .service file")
for path in units:
    service = parse_unit(path).get("Service", {})
    exec_start = service.get("ExecStart", [])
    if len(exec_start) != 1:
        problem(path, "needs exactly one ExecStart")
        continue
    argv = shlex.split(exec_start[0].lstrip("-@:+!"))
    if os.path.basename(argv[0]) != "metrics_server":
        problem(path, f"ExecStart runs {argv[0]}, not the metrics_server example")
    values = check_args(path, argv[1:])
    kill_signal = service.get("KillSignal", [""])[-1]
    if kill_signal not in ("SIGTERM", "TERM"):
        problem(path, f"KillSignal={kill_signal or '(unset)'}: the example stops cleanly on SIGTERM (or SIGINT); say SIGTERM")
    stop = service.get("TimeoutStopSec", service.get("TimeoutSec", [""]))[-1]
    stop_ms = timespan_ms(stop)
    if stop_ms is None:
        problem(path, f"TimeoutStopSec={stop or '(unset)'}: give a finite time span")
    elif stop_ms < bound_ms:
        problem(path, f"TimeoutStopSec={stop} ({stop_ms:.0f} ms) is below drain_timeout + stop_timeout ({bound_ms} ms)")
    restart = service.get("Restart", ["no"])[-1]
    if restart not in ("on-failure", "on-abnormal", "always"):
        problem(path, f"Restart={restart}: a crashed instance must come back (on-failure)")
    environment = " ".join(service.get("Environment", []))
    if "--url" not in values and f"{url_env}=" not in environment and not service.get("EnvironmentFile"):
        problem(path, f"no Redis URL: neither --url nor {url_env} in Environment= or an EnvironmentFile=")
    for listen in values.get("--listen", []):
        if split_listen(listen)[1] is None:
            problem(path, f"--listen {listen}: not HOST:PORT")
    print(f"  {path}: TimeoutStopSec={stop} (at least {bound_ms} ms), KillSignal={kill_signal}, Restart={restart}")
    add_run("1-systemd", f"the systemd unit {path}", argv[1:], values)


# ---- the Kubernetes manifests
def pod_name_value(workload):
    return f"{workload['metadata']['name']}-0"


manifests = sorted(glob.glob("deploy/kubernetes/*.yaml"))
if not manifests:
    problem("deploy/kubernetes", "no .yaml file")
kinds_seen = set()
for number, path in enumerate(manifests, 2):
    try:
        documents = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d]
    except yaml.YAMLError as e:
        problem(path, f"not valid YAML: {e}")
        continue
    services = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "Service"}
    for workload in documents:
        kind = workload.get("kind")
        if kind not in ("Deployment", "StatefulSet"):
            continue
        kinds_seen.add(kind)
        name = workload.get("metadata", {}).get("name", "?")
        where = f"{path} ({kind} {name})"
        spec = workload.get("spec", {})
        template = spec.get("template", {})
        pod = template.get("spec", {})
        labels = template.get("metadata", {}).get("labels", {})
        selector = spec.get("selector", {}).get("matchLabels", {})
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            problem(where, "spec.selector.matchLabels must match the pod template's labels")
        containers = pod.get("containers", [])
        if len(containers) != 1:
            problem(where, "expected exactly one container")
            continue
        container = containers[0]
        command = container.get("command")
        if command and os.path.basename(command[0]) != "metrics_server":
            problem(where, f"command runs {command[0]}, not the metrics_server example")
        args = [str(a) for a in (command[1:] if command else []) + container.get("args", [])]
        env = {e["name"]: e for e in container.get("env", [])}

        # $(VAR) references: Kubernetes expands those the container defines.
        def expand(arg):
            def value(m):
                var = m.group(1)
                entry = env.get(var)
                if entry is None:
                    problem(where, f"{arg}: {var} is not in the container's env")
                    return m.group(0)
                if entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
                    return pod_name_value(workload)
                if "value" in entry:
                    return str(entry["value"])
                problem(where, f"{arg}: check.sh knows no test value for {var}: teach it")
                return m.group(0)
            return re.sub(r"\$\((\w+)\)", value, arg)

        expanded = [expand(a) for a in args]
        values = check_args(where, expanded)
        if "--url" not in values:
            url_entry = env.get(url_env)
            if url_entry is None:
                problem(where, f"no Redis URL: neither --url nor the env variable {url_env}")
            elif "secretKeyRef" not in url_entry.get("valueFrom", {}):
                problem(where, f"{url_env} should come from a Secret (secretKeyRef): the URL carries the password")

        listen = values.get("--listen", [default_listen])[-1]
        host, port = split_listen(listen)
        if host in ("127.0.0.1", "localhost", "::1", "[::1]"):
            problem(where, f"listens on {listen}: the kubelet probes the pod's IP, so listen on 0.0.0.0")
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
        if port not in ports.values():
            problem(where, f"--listen port {port} is not a containerPort ({sorted(ports.values())})")
        for probe_kind, field in (("liveness", "livenessProbe"), ("readiness", "readinessProbe")):
            probe = container.get(field)
            if not probe or "httpGet" not in probe:
                problem(where, f"no {field} with httpGet")
                continue
            get = probe["httpGet"]
            if get.get("path") != probe_paths.get(probe_kind):
                problem(where, f"{field} path {get.get('path')!r}, but the example serves its {probe_kind} "
                               f"probe at {probe_paths.get(probe_kind)!r}")
            probe_port = ports.get(get.get("port"), get.get("port"))
            if probe_port != port:
                problem(where, f"{field} port {get.get('port')!r} is not the port the example listens on ({port})")

        pre_stop = container.get("lifecycle", {}).get("preStop")
        pre_stop_s = 0
        if pre_stop:
            if "sleep" in pre_stop:
                pre_stop_s = int(pre_stop["sleep"]["seconds"])
            else:
                command_text = " ".join(map(str, pre_stop.get("exec", {}).get("command", [])))
                m = re.fullmatch(r"(?:/bin/)?(?:sh -c )?\"?(?:/bin/)?sleep (\d+)\"?", command_text)
                if not m:
                    problem(where, "a preStop hook other than a sleep: teach check.sh how long it takes")
                pre_stop_s = int(m.group(1)) if m else 0
        grace = pod.get("terminationGracePeriodSeconds")
        need_s = math.ceil(bound_ms / 1000) + pre_stop_s
        if not isinstance(grace, int):
            problem(where, "set terminationGracePeriodSeconds")
        elif grace < need_s:
            problem(where, f"terminationGracePeriodSeconds {grace} < preStop {pre_stop_s} s + drain_timeout + "
                           f"stop_timeout ({bound_ms} ms)")

        if kind == "Deployment":
            if "--id" in values:
                problem(where, "a fixed --id in a Deployment gives every pod the same instance id: leave it generated")
            rolling = spec.get("strategy", {}).get("rollingUpdate", {})
            if spec.get("strategy", {}).get("type", "RollingUpdate") != "RollingUpdate" \
                    or rolling.get("maxUnavailable") != 0 or not rolling.get("maxSurge"):
                problem(where, "the guide's rolling update is maxSurge 1, maxUnavailable 0")
        else:
            id_args = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--id"]
            id_var = re.fullmatch(r"\$\((\w+)\)", id_args[-1]) if id_args else None
            if not id_var or env.get(id_var.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") \
                    != "metadata.name":
                problem(where, "a StatefulSet passes its pod name as --id (env from fieldRef metadata.name)")
            service = services.get(spec.get("serviceName"))
            if service is None or service.get("spec", {}).get("clusterIP") != "None":
                problem(where, f"serviceName {spec.get('serviceName')!r} must name a headless Service in {path}")
        print(f"  {where}: probes {probe_paths.get('liveness')} and {probe_paths.get('readiness')} on port {port}, "
              f"terminationGracePeriodSeconds {grace} (at least {need_s} s)")
        add_run(f"{number}-{kind.lower()}", f"the {kind} in {path}", expanded, values)
for kind in ("Deployment", "StatefulSet"):
    if kind not in kinds_seen:
        problem("deploy/kubernetes", f"no {kind}")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
os.makedirs(os.path.join(work, "runs"))
with open(os.path.join(work, "bound_ms"), "w") as f:
    f.write(f"{bound_ms}\n")
for name, what, args, instance_id in runs:
    base = os.path.join(work, "runs", name)
    with open(base + ".args", "w") as f:
        f.write("\0".join(args) + "\0")
    with open(base + ".what", "w") as f:
        f.write(what + "\n")
    with open(base + ".id", "w") as f:
        f.write(instance_id + "\n")
PYTHON
bound_ms=$(cat "$work/bound_ms")
# Absolute: systemd-analyze verify refuses a relative ExecStart.
binary=$(realpath -m "$build/examples/metrics_server/metrics_server")
[ -x "$binary" ] || fail "$binary is missing: build it (cmake --build ${build#"$root"/} --target metrics_server)"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  step "skipping systemd-analyze verify: the tool is not installed"
else
  # It must work here at all: a trivial unit must verify without a word.
  mkdir -p "$work/systemd"
  printf '[Unit]\nDescription=control\n[Service]\nExecStart=/bin/true\n' >"$work/systemd/control.service"
  if ! out=$(timeout 30 systemd-analyze verify "$work/systemd/control.service" 2>&1) || [ -n "$out" ]; then
    step "skipping systemd-analyze verify: it does not work in this environment (${out:-no output})"
  else
    for unit in "$root"/deploy/systemd/*.service; do
      step "systemd-analyze verify ${unit#"$root"/}"
      # The unit names the installed binary; verify checks that it exists.
      copy=$work/systemd/$(basename "$unit")
      sed "s|^ExecStart=[^ ]*|ExecStart=$binary|" "$unit" >"$copy"
      out=$(timeout 30 systemd-analyze verify "$copy" 2>&1) || fail "systemd-analyze verify: $out"
      [ -z "$out" ] || fail "systemd-analyze verify ${unit#"$root"/}:"$'\n'"$out"
    done
  fi
fi

# ---------------------------------------------------------------- 3: the example under them

# A copy, so that every run uses one binary even if the build changes it meanwhile.
cp "$binary" "$work/metrics_server"
binary=$work/metrics_server

step "starting a private redis-server"
# Ready means answering as *our* process: a port taken by another server
# makes ours exit, and that other server must not be mistaken for it.
redis() { timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
ours() { redis info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$redis_pid"; }
for attempt in 1 2 3 4 5; do
  port=$(( 20000 + RANDOM % 40000 ))
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --logfile "$work/redis.log" &
  redis_pid=$!
  for _ in $(seq 50); do
    ours && break
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  ours && break
  kill -9 "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
  [ "$attempt" = 5 ] && { cat "$work/redis.log" >&2 || true; fail "redis-server did not start"; }
done
url="redis://127.0.0.1:$port"

# Starts the example with the arguments of runs/$1.args; sets app_pid and
# app_port (read from its "listening on" line).
start_app() {
  local run=$1 log=$2 args=() i
  mapfile -d '' args <"$work/runs/$run.args"
  for i in "${!args[@]}"; do [ "${args[$i]}" = "@REDIS_URL@" ] && args[i]=$url; done
  LEASEHOLD_URL=$url "$binary" "${args[@]}" >"$work/$log.out" 2>"$work/$log.err" &
  app_pid=$!
  app_pids+=("$app_pid")
  app_port=""
  for _ in $(seq 100); do
    app_port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$log.out")
    [ -n "$app_port" ] && return 0
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/$log.err" >&2
  fail "$log: the example did not say where it listens (${args[*]})"
}
# GET http://127.0.0.1:$1$2: sets code and body (code 000: no answer).
get() {
  code=$(curl --noproxy '*' -s -o "$work/body" -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1$2" || true)
  body=$(cat "$work/body" 2>/dev/null || true)
  rm -f "$work/body"
}
# Polls until `condition` succeeds, at most $1 seconds; fails with $2.
await() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$(( $(now_ms) + seconds * 1000 ))
  until "$@"; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "$what (waited $seconds s)"
    sleep 0.1
  done
}
probes_ok() {
  get "$app_port" /health/live
  if [ "$code" != 200 ] || [ "$body" != live ]; then return 1; fi
  get "$app_port" /health/ready
  [ "$code" = 200 ] && [ "$body" = ready ]
}
# The instance id of the example on app_port, from its /metrics.
instance_of() {
  curl --noproxy '*' -s --max-time 2 "http://127.0.0.1:$1/metrics" \
    | sed -n 's/^leasehold_is_leader{.*instance="\([^"]*\)".*} [01]$/\1/p' | head -n1
}
leads_all() {  # $1: instance id; every group named on the command line, and default
  local group
  for group in "${groups[@]}"; do
    [ "$(redis GET "leader:$group")" = "$1" ] || return 1
  done
}
# SIGTERM to pid $1: it must exit 0 within the stop bound.
stop_app() {
  local pid=$1 log=$2 start rc=0 took
  start=$(now_ms)
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(( $(now_ms) - start )) -gt "$bound_ms" ]; then
      cat "$work/$log.err" >&2
      fail "$log: still running ${bound_ms} ms after SIGTERM (drain_timeout + stop_timeout)"
    fi
    sleep 0.02
  done
  wait "$pid" || rc=$?
  took=$(( $(now_ms) - start ))
  [ "$rc" = 0 ] || { cat "$work/$log.err" >&2; fail "$log: exit status $rc after SIGTERM, expected 0"; }
  echo "  $log: SIGTERM -> exit 0 in $took ms (bound $bound_ms ms)"
}

for args_file in "$work"/runs/*.args; do
  run=$(basename "$args_file" .args)
  what=$(cat "$work/runs/$run.what")
  fixed_id=$(cat "$work/runs/$run.id")
  mapfile -d '' run_args <"$args_file"
  groups=(default)
  ttl_ms=5000  # the example's default
  for i in "${!run_args[@]}"; do
    [ "${run_args[$i]}" = --group ] && groups+=("${run_args[$((i + 1))]}")
    [ "${run_args[$i]}" = --ttl ] && ttl_ms=${run_args[$((i + 1))]}
  done
  step "running the example as $what: ${run_args[*]}"
  start_app "$run" "$run"
  started=$(now_ms)
  await 30 "$run: /health/live and /health/ready did not both answer 200" probes_ok
  ready_ms=$(( $(now_ms) - started ))
  id=$(instance_of "$app_port")
  [ -n "$id" ] || fail "$run: no leasehold_is_leader series with an instance label in /metrics"
  if [ -n "$fixed_id" ]; then
    [ "$id" = "$fixed_id" ] || fail "$run: instance id $id, expected $fixed_id from --id"
  fi
  # A new group waits one ttl (the empty-restart guard) before its first
  # election; later runs find the groups released and lead at once.
  await $(( ttl_ms / 1000 + 15 )) "$run: $id did not lead ${groups[*]}" leads_all "$id"
  echo "  $run: $id ready after $ready_ms ms, leading ${groups[*]} after $(( $(now_ms) - started )) ms"

  if [ -n "$fixed_id" ]; then
    first_pid=$app_pid
    first_port=$app_port
    # A copy with the same id: the lease stays with the first, and neither
    # is ready while both run.
    start_app "$run" "$run-duplicate"
    duplicate_pid=$app_pid
    duplicate_port=$app_port
    dup_not_ready() {
      get "$duplicate_port" /health/ready
      [ "$code" = 503 ] && [[ "$body" == *"instance id"* ]]
    }
    await 15 "$run: a second process with the id $fixed_id stayed ready" dup_not_ready
    echo "  $run: a second process with the same id: /health/ready $code: $body"
    first_not_ready() {
      get "$first_port" /health/ready
      [ "$code" = 503 ] && [[ "$body" == *"instance id"* ]]
    }
    await 15 "$run: the first process with the id $fixed_id stayed ready beside its duplicate" first_not_ready
    echo "  $run: the first process meanwhile: /health/ready $code: $body"
    get "$duplicate_port" /health/live
    [ "$code" = 200 ] || fail "$run: the duplicate's /health/live answered $code"
    leads_all "$id" || fail "$run: the lease moved away from the first $id"
    stop_app "$duplicate_pid" "$run-duplicate"

    # Redis frozen: not ready (a readiness probe takes the pod out of
    # service), still live (no restart), and SIGTERM still ends it in time.
    kill -STOP "$redis_pid"
    redis_not_ready() {
      get "$first_port" /health/ready
      [ "$code" = 503 ] && [[ "$body" == *Redis* ]]
    }
    await 15 "$run: /health/ready stayed 200 with Redis frozen" redis_not_ready
    echo "  $run: Redis frozen: /health/ready $code: $body"
    get "$first_port" /health/live
    [ "$code" = 200 ] || fail "$run: /health/live answered $code with Redis frozen (a liveness probe would restart it)"
    stop_app "$first_pid" "$run"
    kill -CONT "$redis_pid"
    ours || fail "redis-server did not resume"
  else
    stop_app "$app_pid" "$run"
    for group in "${groups[@]}"; do
      [ "$(redis EXISTS "leader:$group")" = 0 ] || fail "$run: leader:$group still held after the stop"
    done
    echo "  $run: leases ${groups[*]} released"
  fi
done

step "passed"
