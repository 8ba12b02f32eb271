# The demo's timeline and verdict, computed from the cron_digest instances'
# logs and checked against what Redis recorded. POSIX awk (Debian's mawk).
#
# Input files:
#   1. the Redis side: "list <tick> <instance>" per entry of the digest list,
#      "record <tick>" for the schedule's tick record
#   2. every log line of every instance and of the demo itself, prefixed with
#      its wall-clock ms and sorted by it
# Variables: start (ms), interval, ttl, grace (ms), policy (skip|run_once),
#            list (the list key); for demo.sh --sentinel also master_bound
#            (ms a master kill may leave the group leaderless) and
#            expect_failovers (1: the master kill; default 2).
# Demo events: kill/usr1 (an instance SIGKILLed / asked to step down);
# planned, switched, settled (SENTINEL FAILOVER, the sentinels name the new
# master, the old one is a replica again); master_kill (SIGKILL of the master).
# Exit status: 0 if every check passed, 1 otherwise.

# Ticks are ms since the epoch: keep every number in full when it becomes a
# string (an array key), which mawk would otherwise print as 1.79e+12.
BEGIN { CONVFMT = "%.0f"; OFMT = "%.0f"; if (expect_failovers == "") expect_failovers = 2 }

function field(key,   i) {
  for (i = 2; i <= NF; i++) if (index($i, key "=") == 1) return substr($i, length(key) + 2)
  return ""
}
function clock(tick,   s) {  # UTC time of day of a tick
  s = int(tick / 1000) % 86400
  return sprintf("%02d:%02d:%02d", int(s / 3600), int((s % 3600) / 60), s % 60)
}
function at(t, text) { n++; when[n] = t; what[n] = text }
function fail(text) { failures++; problems = problems "\n  FAIL: " text }

FILENAME == ARGV[1] {
  if ($1 == "list") { in_list[$2 " " $3]++; list_ticks[$2]++; list_count++ }
  if ($1 == "record") record = $2
  next
}

{
  t = $1; event = $2; who = field("instance")
  if (event == "ready") { names[++instances] = who }
  else if (event == "elected") {
    text = sprintf("%s elected leader (token %s)", who, field("token"))
    if (pending != "") {
      failovers++
      kind[failovers] = pending; from[failovers] = pending_who; to[failovers] = who
      began[failovers] = pending_t; ended[failovers] = t
      text = text sprintf(" -- %d ms after the %s", t - pending_t, pending == "crash" ? "kill" : pending == "master kill" ? "master was killed" : "step-down request")
      pending = ""
    }
    at(t, text)
  }
  else if (event == "revoked") {
    at(t, sprintf("%s no longer leader (%s)", who, field("reason")))
    if (planned_t != "" && settled_t == "" && ++planned_lost) fail(sprintf("%s lost its term during the planned failover (%s)", who, field("reason")))
  }
  else if (event == "sent") {
    tick = field("tick") + 0
    sent[tick]++; by[tick] = (by[tick] == "" ? "" : by[tick] ",") who; sent_by[who]++; total++
    in_logs[tick " " who]++
    if (field("missed") == "1") { missed[tick] = 1; late[tick] = field("late_ms") }
    if (first == "" || tick < first) first = tick
    if (last == "" || tick > last) last = tick
    if (missed[tick]) at(t, sprintf("tick %s sent LATE by %s: missed in the gap, run once at takeover (%s ms late)", clock(tick), who, late[tick]))
    else at(t, sprintf("tick %s sent by %s", clock(tick), who))
  }
  else if (event == "step_down") at(t, sprintf("%s steps down (SIGUSR1)", who))
  else if (event == "stopped") { stopped++; at(t, sprintf("%s stopped, lease released", who)) }
  else if (event == "error") {
    # Losing the connection to a killed master is the failover itself.
    if (pending == "master kill") expected_errors++; else errors++
    at(t, sprintf("%s error: %s", who, substr($0, index($0, "detail="))))
  }
  else if (event == "kill") { pending = "crash"; pending_who = who; pending_t = t; at(t, sprintf("%s KILLED (SIGKILL) while leading", who)) }
  else if (event == "usr1") { pending = "step-down"; pending_who = who; pending_t = t }
  else if (event == "planned") { planned_t = t; planned_who = who; at(t, sprintf("SENTINEL FAILOVER (master :%s) while %s leads", field("port"), who)) }
  else if (event == "switched") at(t, sprintf("the sentinels name the new master :%s", field("port")))
  else if (event == "settled") { settled_t = t; at(t, sprintf("the old master is a replica of :%s again", field("port"))) }
  else if (event == "master_kill") { pending = "master kill"; pending_who = who; pending_t = t; at(t, sprintf("master :%s KILLED (SIGKILL) while %s leads", field("port"), who)) }
}

END {
  if (total == 0) { print "verdict: FAIL\n  no digest was sent at all"; exit 1 }

  # Every tick due between the first and the last one sent.
  due = 0
  for (tick = first; tick <= last; tick += interval) {
    due++
    if (sent[tick] > 1) fail(sprintf("tick %s was sent %d times (by %s)", clock(tick), sent[tick], by[tick]))
    if (sent[tick]) continue
    gap = 0
    for (f = 1; f <= failovers; f++) if (began[f] < tick && tick < ended[f]) gap = f
    if (gap) at(tick, sprintf("tick %s sent by nobody: leaderless gap", clock(tick)))
    else fail(sprintf("tick %s was not sent, and no leaderless gap explains it", clock(tick)))
  }

  # The misfire policy, gap by gap: run_once sends the latest gap tick late
  # (if within the grace period) and loses the others; skip loses them all.
  for (f = 1; f <= failovers; f++) {
    summary[f] = ""
    latest = ""
    for (tick = first; tick <= last; tick += interval) if (began[f] < tick && tick < ended[f]) latest = tick
    for (tick = first; tick <= last; tick += interval) {
      if (!(began[f] < tick && tick < ended[f])) continue
      expect = (policy == "run_once" && tick == latest && ended[f] - tick <= grace)
      if (sent[tick] && missed[tick]) note = sprintf("%s run late once by %s (%s ms late)", clock(tick), by[tick], late[tick])
      else if (sent[tick]) note = sprintf("%s sent on time by %s", clock(tick), by[tick])
      else note = clock(tick) " lost"
      summary[f] = summary[f] (summary[f] == "" ? "" : ", ") note
      if (expect && !(sent[tick] && missed[tick])) fail(sprintf("misfire %s should have run tick %s late once", policy, clock(tick)))
      if (!expect && sent[tick]) fail(sprintf("tick %s in the gap was sent although policy %s should lose it", clock(tick), policy))
    }
  }

  # The Redis side: the list the digest was appended to, and the tick record.
  for (k in in_logs) if (in_list[k] != in_logs[k]) fail(sprintf("\"%s\" is in the logs %d times but in Redis %d times", k, in_logs[k], in_list[k] + 0))
  for (k in in_list) if (!(k in in_logs)) fail(sprintf("\"%s\" is in Redis but in no log", k))
  for (k in list_ticks) if (list_ticks[k] > 1) fail(sprintf("tick %s appears %d times in %s", clock(k), list_ticks[k], list))
  if (record + 0 != last) fail(sprintf("the tick record in Redis says %s, the last tick sent was %s", record, last))
  if (errors) fail(sprintf("%d error lines in the logs", errors))
  for (f = 1; f <= failovers; f++) {
    # A crash costs at most the rest of the lease; a step-down, a round trip or two.
    bound = kind[f] == "crash" ? ttl + 1000 : kind[f] == "master kill" ? master_bound : 1000
    if (ended[f] - began[f] > bound) fail(sprintf("the %s failover took %d ms (bound %d ms)", kind[f], ended[f] - began[f], bound))
  }
  crashes = 0
  for (f = 1; f <= failovers; f++) if (kind[f] == "crash") crashes++
  if (stopped != instances - crashes) fail(sprintf("%d of %d surviving instances stopped gracefully", stopped, instances - crashes))
  if (failovers < expect_failovers) fail(sprintf("expected %d failovers, saw %d", expect_failovers, failovers))

  # The timeline, in time order (insertion sort keeps equal times in input order).
  for (i = 2; i <= n; i++) {
    w = when[i]; x = what[i]
    for (j = i - 1; j >= 1 && when[j] > w; j--) { when[j + 1] = when[j]; what[j + 1] = what[j] }
    when[j + 1] = w; what[j + 1] = x
  }
  print "timeline (seconds since the start; ticks in UTC)"
  for (i = 1; i <= n; i++) printf("  %+7.2fs  %s\n", (when[i] - start) / 1000, what[i])

  print ""
  print "verdict: " (failures ? "FAIL" : "PASS")
  per = ""
  for (i = 1; i <= instances; i++) per = per (i > 1 ? ", " : "") names[i] ": " (sent_by[names[i]] + 0)
  printf("  ticks sent: %d of %d due (%s)\n", total, due, per)
  printf("  Redis: %d entries in %s, tick record %s; no tick sent twice in the logs or in Redis: %s\n",
         list_count, list, clock(record), failures ? "see below" : "yes")
  if (planned_t != "")
    printf("  planned failover (SENTINEL FAILOVER): %s kept its term: %s\n", planned_who, planned_lost ? "no" : "yes")
  for (f = 1; f <= failovers; f++) {
    if (kind[f] == "master kill")
      printf("  master kill: %s demoted at once; leaderless for %d ms until %s was elected on the promoted replica; gap ticks: %s; %d connection-lost reports (expected)\n",
             from[f], ended[f] - began[f], to[f], summary[f] == "" ? "none" : summary[f], expected_errors)
    else if (kind[f] == "crash")
      printf("  crash of %s: leaderless for %d ms (lease ttl %d ms) until %s took over; gap ticks: %s\n",
             from[f], ended[f] - began[f], ttl, to[f], summary[f] == "" ? "none" : summary[f])
    else
      printf("  step-down of %s: %s led %d ms after the request; gap ticks: %s\n",
             from[f], to[f], ended[f] - began[f], summary[f] == "" ? "none" : summary[f])
  }
  if (failures) print problems
  exit failures ? 1 : 0
}
