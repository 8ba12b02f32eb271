#include <leasehold/impl/lease/lease_scripts.hpp>

#include <leasehold/key_layout.hpp>

#include <array>
#include <string>
#include <string_view>

namespace leasehold::detail {

namespace {

// Shared by the acquire scripts: a standby leaves a bid (its id, incarnation
// and priority, for one ttl) when it outranks the holder, or when the holder
// is another incarnation of its own id, so that the leader hears of it at
// its next renewal. A flag in the holder record (which the renewal reads
// anyway) says that a bid may stand: renewals read the bid only then. A
// higher bid replaces a lower one; a bid never blocks a refusal (pcall:
// under maxmemory OOM there is simply no bid). A standby that does not
// outrank the holder reads no bid (and answers true): an idle standby's
// look costs Redis GET, HGET and PTTL, on the change stamp MGET and PTTL.
constexpr std::string_view bid_function = R"lua(local function bid(holder_priority, rival)
  local mine = tonumber(ARGV[4])
  if not rival and mine <= holder_priority then return true end
  local current = redis.call('HMGET', KEYS[4], 'incarnation', 'priority')
  if current[1] and current[1] ~= ARGV[3] and mine <= (tonumber(current[2]) or 0) then return end
  redis.pcall('HSET', KEYS[4], 'id', ARGV[1], 'incarnation', ARGV[3], 'priority', ARGV[4])
  redis.pcall('PEXPIRE', KEYS[4], ARGV[2])
  redis.pcall('HSET', KEYS[3], 'bid', 1)
  changed()
end
local function own_bid_answered()
  if redis.call('HGET', KEYS[4], 'incarnation') == ARGV[3] then redis.call('DEL', KEYS[4]) end
end
)lua";

// The change stamp (KeyLayout::change_stamp_key, the last of KEYS; one
// endpoint only): every script that writes a holder record's incarnation or
// raises its bid flag then replaces it, so that a batched renewal may skip
// the holder record of a group it found clean at the stamp it still reads
// (renew_stamped_batch_script). Its value never repeats, not even on a
// replica promoted with writes lost or a server restored from a snapshot:
// the server's time and one more than the count it replaces. DEL first, by
// call: a stamp that cannot be written (maxmemory, TIME refused) is gone,
// and the renewals read every record again. After the script's own writes:
// the first write of a script is the one Redis checks against maxmemory.
constexpr std::string_view stamp_writer = R"lua(local function changed()
  local stamp_key = KEYS[#KEYS]
  local old = redis.pcall('GET', stamp_key)
  redis.call('DEL', stamp_key)
  local time = redis.pcall('TIME')
  if type(old) == 'table' or time.err then return end
  local count = tonumber(string.match(old or '', '#(%d+)$')) or 0
  redis.pcall('SET', stamp_key, time[1] .. '.' .. time[2] .. '#' .. string.format('%d', count + 1))
end
)lua";
constexpr std::string_view no_stamp = "local function changed() end\n";

// How an acquire reads the lease key. On the change stamp, with the stamp in
// one MGET: when it is still the one the caller sends (ARGV[5], "" for
// none), the holder record is as the caller's last look found it, one whose
// priority this standby does not outrank, and needs no reading (an idle
// standby's look: MGET and PTTL). A key that MGET cannot tell (missing, or
// of another type) is read again with GET, which answers WRONGTYPE.
constexpr std::string_view read_holder = R"lua(local holder, stamp, vouched = redis.call('GET', KEYS[1]), false, false
)lua";
constexpr std::string_view read_holder_stamped = R"lua(local read = values_of({KEYS[1], KEYS[#KEYS]})
local holder, stamp = read[1] or redis.call('GET', KEYS[1]), read[2]
local vouched = stamp and stamp == ARGV[5]
)lua";

// MGET where the ACL grants it (the rule that earlier releases documented
// does not): otherwise no values, and each key is read with GET instead.
constexpr std::string_view values_of_function = R"lua(local function values_of(names)
  local values = redis.pcall('MGET', unpack(names))
  if values.err then return {} end
  return values
end
)lua";

// Every acquire script starts alike: a re-claim of this incarnation's own
// key, a refusal when another incarnation of this id holds it (a restart
// waits out its predecessor's lease; a duplicate id never leads twice) unless
// `take_over` says the predecessor is known to be dead, or a refusal naming
// the live holder (and, on the change stamp, the stamp that vouches that
// this standby does not outrank it)...
constexpr std::string_view acquire_head = R"lua(if holder == ARGV[1] then
  local incarnation = redis.call('HGET', KEYS[3], 'incarnation')
  if incarnation and incarnation ~= ARGV[3] and not take_over then
    bid(0, true)
    return {0, holder, redis.call('PTTL', KEYS[1]), 0, incarnation}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if incarnation ~= ARGV[3] then
    redis.pcall('HSET', KEYS[3], 'incarnation', ARGV[3], 'priority', ARGV[4])
    changed()
  end
  local token = redis.pcall('INCR', KEYS[2])
  if type(token) ~= 'number' then token = tonumber(redis.call('GET', KEYS[2])) or 0 end
  own_bid_answered()
  return {1, holder, tonumber(ARGV[2]), token}
end
if holder then
  local outranked = vouched
  if holder ~= '' and not vouched then outranked = bid(tonumber(redis.call('HGET', KEYS[3], 'priority')) or 0, false) end
  local refusal = {0, holder, redis.call('PTTL', KEYS[1]), 0}
  if outranked and stamp and holder ~= '' then refusal[5] = stamp end
  return refusal
end
)lua";

// ... and end alike: a fresh term on a free key.
constexpr std::string_view acquire_fresh = R"lua(local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
redis.call('HSET', KEYS[3], 'incarnation', ARGV[3], 'priority', ARGV[4])
changed()
own_bid_answered()
return {1, ARGV[1], tonumber(ARGV[2]), token}
)lua";

// The server's identity and time, for the data marker: nil and why where
// INFO or TIME is refused in scripts. `marked_since` answers the marker's
// time when it names this identity (and is not in the future), else writes
// one of now and answers now.
constexpr std::string_view data_marker_functions = R"lua(local function data_identity()
  local server, replication = redis.pcall('INFO', 'server'), redis.pcall('INFO', 'replication')
  if type(server) ~= 'string' then return nil, 'INFO: ' .. tostring(server.err) end
  if type(replication) ~= 'string' then return nil, 'INFO: ' .. tostring(replication.err) end
  local run_id = string.match(server, 'run_id:(%w+)')
  local replid = string.match(replication, 'master_replid:(%w+)')
  if not run_id or not replid then return nil, 'INFO names no run_id or master_replid' end
  local now = string.match(server, 'server_time_usec:(%d+)')
  if now then
    now = tonumber(string.sub(now, 1, -4))
  else
    local time = redis.pcall('TIME')
    if time.err then return nil, 'TIME: ' .. time.err end
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return run_id .. ':' .. replid, now
end
local function marked_since(key, identity, now)
  local marker = redis.pcall('GET', key)
  if type(marker) == 'table' and marker.err then return nil, 'the data marker: ' .. marker.err end
  local seen, since = string.match(marker or '', '^(%S+) (%d+)$')
  since = tonumber(since)
  if seen == identity and since <= now then return since end
  redis.call('SET', key, identity .. ' ' .. string.format('%d', now))
  return now
end
)lua";

// No fencing counter: a new group, or a Redis that lost its data (an empty
// restart, a promoted replica that never had the group) while a leader may
// still believe in its lease. The data marker (KEYS[5]) tells them apart:
// it names the server process (run_id) and replication history
// (master_replid) that wrote it, and when. A restart (from a snapshot too)
// changes the run_id, a promotion the replid, and a flush deletes the
// marker, so a marker of the current identity proves that whatever this
// server lost, it lost before the marker's time; a leader's trust in such a
// lease ended one ttl after that. Older than one ttl: the group is new, and
// taken at once. Missing, foreign or younger: an empty holder keeps the key
// until one ttl past the marker's time. A server that refuses INFO or TIME
// in scripts (or a marker key of another type) gets the plain guard (one
// ttl), and the reason as a 5th element.
constexpr std::string_view empty_restart_guard = R"lua(local function unproven_ms(ttl)
  local identity, now = data_identity()
  if not identity then return nil, now end
  local since, failure = marked_since(KEYS[5], identity, now)
  if not since then return nil, failure end
  return math.max(0, since + ttl - now)
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local wait, unproven = unproven_ms(tonumber(ARGV[2]))
  if wait ~= 0 then
    wait = wait or tonumber(ARGV[2])
    redis.call('SET', KEYS[2], 0)
    redis.call('SET', KEYS[1], '', 'PX', wait)
    if unproven then return {0, '', wait, 0, unproven} end
    return {0, '', wait, 0}
  end
end
)lua";

// The release and hand-over scripts' check: the key holds this id, and (when
// an incarnation is given) this incarnation's lease, not a duplicate's.
constexpr std::string_view release_check = R"lua(if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local incarnation = redis.call('HGET', KEYS[2], 'incarnation')
if ARGV[3] ~= '' and incarnation and incarnation ~= ARGV[3] then return 0 end
)lua";

std::string acquire_body(bool guarded, bool take_over, bool stamped) {
  std::string body = take_over ? "local take_over = true\n" : "local take_over = false\n";
  if (stamped) {
    body.append(stamp_writer).append(bid_function).append(values_of_function).append(read_holder_stamped);
  } else {
    body.append(no_stamp).append(bid_function).append(read_holder);
  }
  body.append(acquire_head);
  if (guarded) body.append(data_marker_functions).append(empty_restart_guard);
  return body.append(acquire_fresh);
}

template <bool guarded>
const redis::Script& acquire_variant(bool take_over, bool stamped) {
  static const std::array<redis::Script, 4> scripts{
      redis::Script(acquire_body(guarded, false, false)), redis::Script(acquire_body(guarded, true, false)),
      redis::Script(acquire_body(guarded, false, true)), redis::Script(acquire_body(guarded, true, true))};
  return scripts[(take_over ? 1 : 0) + (stamped ? 2 : 0)];
}

}  // namespace

const redis::Script& acquire_script(bool take_over, bool stamped) { return acquire_variant<false>(take_over, stamped); }

const redis::Script& guarded_acquire_script(bool take_over, bool stamped) {
  return acquire_variant<true>(take_over, stamped);
}

namespace {

// One group's renewal, shared by the single and the batched script.
// Three calls in the common case (Redis's CPU per renewal): the bid is read
// only while the holder record's flag says one may stand, and the flag is
// lowered (HSET, which the ACL rule grants; pcall: never a failed renewal)
// once the bid has expired or been answered. `current`: the lease key's
// value when the caller read it already (MGET), nil to read it here.
constexpr std::string_view renew_function = R"lua(local function holds(lease, current)
  if current == nil then current = redis.call('GET', lease) end
  return current == ARGV[1]
end
local function renew(lease, holder, bid, current)
  if not holds(lease, current) then return 0 end
  local record = redis.call('HMGET', holder, 'incarnation', 'bid')
  if record[1] and record[1] ~= ARGV[3] then return {0, record[1]} end
  redis.call('PEXPIRE', lease, ARGV[2])
  if record[2] ~= '1' then return 1 end
  local standing = redis.call('HMGET', bid, 'id', 'incarnation', 'priority')
  if not standing[2] then
    redis.pcall('HSET', holder, 'bid', 0)
  elseif standing[2] ~= ARGV[3] then
    return {1, standing[1] or '', standing[2], tonumber(standing[3]) or 0}
  end
  return 1
end
)lua";

}  // namespace

const redis::Script& renew_script() {
  static const redis::Script script(std::string(renew_function).append("return renew(KEYS[1], KEYS[3], KEYS[4])\n"));
  return script;
}

const redis::Script& renew_batch_script() {
  static const redis::Script script(std::string(renew_function).append(R"lua(local answers = {}
for i = 1, #KEYS, 4 do answers[#answers + 1] = renew(KEYS[i], KEYS[i + 2], KEYS[i + 3]) end
return answers
)lua"));
  return script;
}

// Groups the caller found clean at the stamp it sends (ARGV[4]) come first
// (ARGV[5] of them), with their lease keys only: while the stamp is still
// that, their holder records are as the caller last read them, so that
// PEXPIRE alone renews them; once it changed, they answer -1 (not renewed:
// send again with every key). One MGET reads the stamp and every lease key,
// one call per batch instead of a GET per group (a key of another type
// reads as nil: that group lost its lease, the others are renewed). Where
// the ACL refuses MGET, GET reads each key as before.
const redis::Script& renew_stamped_batch_script() {
  static const redis::Script script(std::string(renew_function)
                                        .append(values_of_function)
                                        .append(R"lua(local lean = tonumber(ARGV[5]) or 0
local names = {KEYS[#KEYS]}
for i = 1, lean do names[i + 1] = KEYS[i] end
for i = lean + 1, #KEYS - 1, 4 do names[#names + 1] = KEYS[i] end
local values = values_of(names)
if values[1] == nil then values[1] = redis.pcall('GET', names[1]) end
local stamp = values[1]
if type(stamp) ~= 'string' then stamp = false end
local vouched = stamp and stamp == ARGV[4]
local answers = {}
for i = 1, lean do
  local answer = -1
  if vouched then
    answer = 0
    if holds(KEYS[i], values[i + 1]) then
      redis.call('PEXPIRE', KEYS[i], ARGV[2])
      answer = 1
    end
  end
  answers[i] = answer
end
for i = lean + 1, #KEYS - 1, 4 do
  answers[#answers + 1] = renew(KEYS[i], KEYS[i + 2], KEYS[i + 3], values[#answers + 2])
end
answers[#answers + 1] = stamp
return answers
)lua"));
  return script;
}

const redis::Script& renew_node_script() {
  static const redis::Script script(std::string("#!lua flags=allow-cross-slot-keys\n")
                                        .append(renew_function)
                                        .append("local holder_suffix, bid_suffix = '")
                                        .append(KeyLayout::holder_suffix)
                                        .append("', '")
                                        .append(KeyLayout::bid_suffix)
                                        .append("'\n")
                                        .append(R"lua(local answers = {}
for i = 4, #ARGV do
  local ok, answer = pcall(renew, ARGV[i], ARGV[i] .. holder_suffix, ARGV[i] .. bid_suffix)
  if not ok then answer = {err = type(answer) == 'table' and answer.err or tostring(answer)} end
  answers[#answers + 1] = answer
end
return answers
)lua"));
  return script;
}

// Each marker through pcall: a slot the node does not serve (moved, moving,
// or not yet its own after a restart) is counted apart, and the others are
// marked all the same.
const redis::Script& mark_slots_script() {
  static const redis::Script script(std::string("#!lua flags=allow-cross-slot-keys\n")
                                        .append(data_marker_functions)
                                        .append(R"lua(local identity, now = data_identity()
if not identity then return {-1, now} end
local written, other_type, unserved = 0, 0, 0
for i = 1, #ARGV do
  local ok, since, failure = pcall(marked_since, ARGV[i], identity, now)
  if ok and since then
    if since == now then written = written + 1 end
  elseif ok and string.find(failure, 'WRONGTYPE', 1, true) then
    other_type = other_type + 1
  else
    unserved = unserved + 1
  end
end
return {written, other_type, unserved}
)lua"));
  return script;
}

namespace {

// The notice goes out with PUBLISH (the message: the releaser's id), or on
// a Redis Cluster with SPUBLISH to the channel of the keys' slot (only that
// shard hears it), which the slot's groups share: the message then names
// the lease key too (KeyLayout::read_release_notice), as it does when the
// hash-tagged layout is PUBLISHed on one endpoint. A cluster without
// sharded pub/sub (Redis 6, KeyDB) gets the notice through PUBLISH, which
// it broadcasts to every node, where standbys SUBSCRIBE instead
// (ClusterNotices). Both go through pcall: a notice that cannot be sent
// must not fail a release that happened (standbys then poll).
std::string notice_line(Notices notices) {
  switch (notices) {
    case Notices::sharded:
      return "local notice = KEYS[1] .. '\\n' .. ARGV[1]\n"
             "local sent = redis.pcall('SPUBLISH', ARGV[2], notice)\n"
             "if type(sent) == 'table' and sent.err then redis.pcall('PUBLISH', ARGV[2], notice) end\n"
             "return 1\n";
    case Notices::published_tagged: return "redis.call('PUBLISH', ARGV[2], KEYS[1] .. '\\n' .. ARGV[1])\nreturn 1\n";
    case Notices::published: break;
  }
  return "redis.call('PUBLISH', ARGV[2], ARGV[1])\nreturn 1\n";
}

std::string release_body(Notices notices) {
  return std::string(release_check).append("redis.call('DEL', KEYS[1])\n").append(notice_line(notices));
}

std::string hand_over_body(Notices notices, bool stamped) {
  return std::string(stamped ? stamp_writer : no_stamp)
      .append(release_check)
      .append("redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[7])\n"
              "redis.call('HSET', KEYS[2], 'incarnation', ARGV[5], 'priority', ARGV[6])\n"
              "changed()\n")
      .append(notice_line(notices));
}

}  // namespace

Notices notices_for(bool cluster, KeyLayout::Form form) noexcept {
  if (cluster) return Notices::sharded;
  return form == KeyLayout::Form::hash_tagged ? Notices::published_tagged : Notices::published;
}

const redis::Script& release_script(Notices notices) {
  static const redis::Script published(release_body(Notices::published));
  static const redis::Script sharded(release_body(Notices::sharded));
  static const redis::Script published_tagged(release_body(Notices::published_tagged));
  if (notices == Notices::sharded) return sharded;
  return notices == Notices::published_tagged ? published_tagged : published;
}

const redis::Script& hand_over_script(Notices notices, bool stamped) {
  static const redis::Script published(hand_over_body(Notices::published, false));
  static const redis::Script sharded(hand_over_body(Notices::sharded, false));
  static const redis::Script published_tagged(hand_over_body(Notices::published_tagged, false));
  // The change stamp is one endpoint's, where keys are plain.
  static const redis::Script stamped_published(hand_over_body(Notices::published, true));
  if (stamped) return stamped_published;
  if (notices == Notices::sharded) return sharded;
  return notices == Notices::published_tagged ? published_tagged : published;
}

}  // namespace leasehold::detail
