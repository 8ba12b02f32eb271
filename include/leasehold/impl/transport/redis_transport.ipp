#include <leasehold/impl/transport/redis_transport.hpp>

#include <leasehold/impl/core/group_state.hpp>
#include <leasehold/impl/lease/lease_scripts.hpp>
#include <leasehold/impl/protocol/script_batch.hpp>
#include <leasehold/impl/redis/replica_wait.hpp>
#include <leasehold/impl/protocol/slot_sort.hpp>
#include <leasehold/impl/cluster/redirect.hpp>

#include <leasehold/log.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace leasehold::detail {

namespace {

std::array<std::string_view, 3> renew_batch_argv(const std::string& id, const std::string& ttl_ms,
                                                 const std::string& incarnation) {
  return {id, ttl_ms, incarnation};
}

redis::ScriptArguments stamp_key_part(const KeyLayout& layout) {
  const std::string key = layout.change_stamp_key();
  const std::array<std::string_view, 1> keys{key};
  return redis::ScriptArguments(keys, {});
}

// Only a lease taken or extended needs the replicas' word: a 1, or an array
// that starts with one.
bool lease_granted(const redis::Reply& reply) {
  if (reply.is_integer()) return reply.integer == 1;
  return reply.is_array() && !reply.elements.empty() && reply.elements[0].is_integer() &&
         reply.elements[0].integer == 1;
}

}  // namespace

RedisTransport::RedisTransport(CommandRoute& commands, KeyLayout layout, std::string instance_id,
                               std::string incarnation, Settings settings)
    : commands_(commands),
      layout_(std::move(layout)),
      id_(std::move(instance_id)),
      incarnation_(std::move(incarnation)),
      ttl_ms_(std::to_string(settings.ttl.count())),
      acquire_(settings.empty_restart_guard ? guarded_acquire_script(false, settings.change_stamp)
                                            : acquire_script(false, settings.change_stamp)),
      take_over_acquire_(settings.empty_restart_guard ? guarded_acquire_script(true, settings.change_stamp)
                                                      : acquire_script(true, settings.change_stamp)),
      settings_(settings),
      renew_argv_(renew_batch_argv(id_, ttl_ms_, incarnation_)),
      stamp_key_(stamp_key_part(layout_)),
      node_batches_wanted_(commands.is_cluster() && commands.options().cluster->cross_slot_renewals),
      node_batches_(node_batches_wanted_) {
  commands_.preload(acquire_);
  if (settings.reclaim_on_restart) commands_.preload(take_over_acquire_);
  commands_.preload(renew_script());
  commands_.preload(settings.change_stamp ? renew_stamped_batch_script() : renew_batch_script());
  if (node_batches_wanted_) commands_.preload(renew_node_script());
  commands_.preload(release_script(settings.notices));
  commands_.preload(hand_over_script(settings.notices, settings.change_stamp));
}

// The handler of one group's script: its answer, after a WAIT in confirm
// mode when the script took or extended the lease.
auto RedisTransport::answer_for(GroupState& g, Command command, std::uint64_t seq, LeaseReplyListener& replies) {
  const bool confirming = settings_.confirm_replicas > 0 && command != Command::release;
  return [this, owner = owner_.lock(), g = &g, command, seq, r = &replies, confirming](
             error_code ec, redis::Reply reply, redis::Client* via) {
    if (confirming && !ec && lease_granted(reply)) return confirm(*g, command, seq, *r, std::move(reply), via);
    r->on_lease_reply(*g, command, seq, ec, reply, Replicated::not_asked, Clock::now());
  };
}

void RedisTransport::send(GroupState& g, Command command, std::uint64_t seq, LeaseReplyListener& replies) {
  if (command == Command::renew) return queue_renewal(g, seq, replies);
  auto answer = answer_for(g, command, seq, replies);
  switch (command) {
    case Command::acquire: {
      const bool take_over = settings_.reclaim_on_restart && !g.first_acquire_answered;
      const redis::Script& script = take_over ? take_over_acquire_ : acquire_;
      if (!settings_.empty_restart_guard && !settings_.change_stamp) {
        return commands_.eval(script, g.lease_arguments, g.slot, std::move(answer));
      }
      std::vector<std::string> args{id_, ttl_ms_, incarnation_, std::to_string(g.machine.priority())};
      if (!settings_.change_stamp) return commands_.eval(script, acquire_keys(g), std::move(args), std::move(answer));
      const bool vouching = trusted(g);
      args.push_back(vouching ? stamp_ : std::string());
      return commands_.eval(script, acquire_keys(g), std::move(args),
                            [this, g = &g, vouching, answer = std::move(answer)](
                                error_code ec, redis::Reply reply, redis::Client* via) mutable {
                              if (!ec) read_refusal_stamp(*g, reply, vouching);
                              answer(ec, std::move(reply), via);
                            });
    }
    case Command::release: {
      std::vector<std::string> keys{std::string(g.key), layout_.holder_key(g.name)};
      std::vector<std::string> args{id_, layout_.release_channel(g.name), incarnation_};
      if (const Bid* to = g.machine.hand_over_target()) {
        args.insert(args.end(), {to->id, to->incarnation, std::to_string(to->priority), ttl_ms_});
        if (settings_.change_stamp) keys.push_back(layout_.change_stamp_key());
        return commands_.eval(hand_over_script(settings_.notices, settings_.change_stamp), std::move(keys),
                              std::move(args), std::move(answer));
      }
      return commands_.eval(release_script(settings_.notices), std::move(keys), std::move(args), std::move(answer));
    }
    case Command::renew:  // queued above
    case Command::none: return;
  }
}

// The group's four keys, then the guard's data marker and the change stamp
// where they are used (acquires only: the renewals keep four keys per group).
std::vector<std::string> RedisTransport::acquire_keys(const GroupState& g) const {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < renew_batch_keys_per_group; ++i) keys.emplace_back(g.lease_arguments.key(i));
  if (settings_.empty_restart_guard) keys.push_back(layout_.data_marker_key(g.name));
  if (settings_.change_stamp) keys.push_back(layout_.change_stamp_key());
  return keys;
}

void RedisTransport::confirm(GroupState& g, Command command, std::uint64_t seq, LeaseReplyListener& replies,
                             redis::Reply reply, redis::Client* via) {
  if (via == nullptr) {
    return replies.on_lease_reply(g, command, seq, make_error_code(errc::not_connected), reply, Replicated::not_asked,
                                  Clock::now());
  }
  wait_for_replicas(*via, settings_.confirm_replicas, settings_.confirm_timeout,
                    [this, owner = owner_.lock(), g = &g, command, seq, r = &replies, reply = std::move(reply)](
                        error_code ec, bool enough, const redis::Reply& wait) {
                      if (ec && wait_was_refused(wait)) {
                        return r->on_lease_reply(*g, command, seq, {}, reply, Replicated::too_few, Clock::now());
                      }
                      if (ec) return r->on_lease_reply(*g, command, seq, ec, wait, Replicated::not_asked, Clock::now());
                      r->on_lease_reply(*g, command, seq, {}, reply,
                                        enough ? Replicated::enough : Replicated::too_few, Clock::now());
                    });
}

// Some servers and managed services have no WAIT, or an ACL refuses it:
// confirm mode cannot confirm anything there. Said once, with the server's
// words; the lease commands then count as too few, so that no group leads
// (and none passes its lease round) until a connection accepts WAIT.
bool RedisTransport::wait_was_refused(const redis::Reply& wait) {
  if (!wait.is_error()) return false;
  if (!wait_refused_) {
    wait_refused_ = true;
    const Error error{make_error_code(classify_server_error(wait.str)),
                      fmt::format("confirm mode (confirm_replicas {}) needs WAIT, which the server refused: {}; no "
                                  "group leads until it accepts WAIT (grant +wait, or turn confirm mode off)",
                                  settings_.confirm_replicas, wait.str)};
    log(LogLevel::warning, fmt::format("elector {}: {}", id_, error.message()));
    if (on_confirm_refused_) on_confirm_refused_(error);
  }
  return true;
}

// The renewals of a batch and their arguments, kept until the answer: a
// NOSCRIPT resends them.
struct RedisTransport::Batch {
  std::vector<Renewal> renewals;
  std::optional<redis::ScriptArguments> arguments;
  bool stamped = false;      // renew_stamped_batch_script(): the stamp answers last
  std::size_t trusted = 0;   // ... and the first this many on its word
};

void RedisTransport::queue_renewal(GroupState& g, std::uint64_t seq, LeaseReplyListener& replies) {
  renewals_.push_back({&g, seq, &replies, g.slot});
  if (renewals_.size() > 1) return;
  boost::asio::post(commands_.executor(), [this, owner = owner_.lock()] { flush_renewals(); });
}

// A renewal its group no longer awaits (a demotion, a step-down or a new
// connection since it was queued) is answered at once instead: it must not
// leave after the command that replaced it, nor on a later connection.
void RedisTransport::flush_renewals() {
  std::vector<Renewal> queued;
  queued.swap(renewals_);  // answers below may queue renewals for the next flush
  // A script's keys must share a slot wherever the keys are hash-tagged: a
  // cluster, or one endpoint sharding behind it (it answers CROSSSLOT).
  const bool by_slot = layout_.form() == KeyLayout::Form::hash_tagged;
  if (by_slot) sort_by_slot(queued, sorting_);
  const auto awaited = [](const Renewal& r) {
    return r.group->machine.in_flight() == Command::renew && r.group->machine.in_flight_seq() == r.seq;
  };
  for (const Renewal& r : queued) r.group->prefetch();
  std::vector<Renewal> batch;
  for (auto next = queued.begin(); next != queued.end();) {
    // One server's renewals all go together; a cluster's, those of one
    // node (of one slot, where the node cannot take a cross-slot script);
    // hash-tagged ones on one endpoint, those of one slot.
    const std::uint16_t slot = next->slot;
    const cluster::detail::ClusterNode* node = node_batches_ ? commands_.master_of(slot) : nullptr;
    const auto together = [&](const Renewal& r) {
      return !by_slot || r.slot == slot || (node != nullptr && commands_.master_of(r.slot) == node);
    };
    for (; next != queued.end() && together(*next) && batch.size() < max_batch; ++next) {
      if (awaited(*next)) {
        batch.push_back(*next);
      } else {
        next->replies->on_lease_reply(*next->group, Command::renew, next->seq,
                                      make_error_code(boost::asio::error::operation_aborted), {},
                                      Replicated::not_asked, Clock::now());
      }
    }
    // On the change stamp one group goes through the batch script too: its
    // MGET reads the stamp with the lease key, and the stamp spares the
    // holder record.
    if (batch.size() == 1 && !settings_.change_stamp) {
      renew_one(batch.front());
    } else if (!batch.empty()) {
      // Read before the move: the order of a call's arguments is unspecified.
      const bool across_slots = batch.front().slot != batch.back().slot;
      renew_many(std::move(batch), across_slots);
    }
    batch.clear();
  }
  if (renewals_.empty()) {
    queued.clear();
    renewals_.swap(queued);  // keeps the capacity
  }
}

// A renewal may wait out a slot migration or a shard failover on a cluster
// (TRYAGAIN, CLUSTERDOWN) for as long as its lease lasts: only a success
// extends the lease, and giving up earlier would demote a leader whose
// lease still holds. A batch waits as long as its earliest lease.
void RedisTransport::renew_one(const Renewal& r) {
  GroupState& g = *r.group;
  commands_.eval(renew_script(), g.lease_arguments, g.slot, answer_for(g, Command::renew, r.seq, *r.replies),
                 g.machine.deadline());
}

// The batch's keys are the groups' own lease keys, already encoded: as KEYS
// for one slot, as ARGV for a cluster node's several slots.
void RedisTransport::renew_many(std::vector<Renewal> renewals, bool across_slots) {
  auto batch = std::make_shared<Batch>();
  batch->renewals = std::move(renewals);
  batch->stamped = settings_.change_stamp && !across_slots;
  if (batch->stamped) batch->trusted = put_trusted_first(batch->renewals);
  std::optional<TimePoint> until;
  batch_parts_.clear();
  for (const Renewal& r : batch->renewals) {
    batch_parts_.push_back(&r.group->lease_arguments);
    if (const auto deadline = r.group->machine.deadline()) until = until ? std::min(*until, *deadline) : *deadline;
  }
  if (batch->stamped) {
    batch_parts_.push_back(&stamp_key_);
    const std::string trusted = std::to_string(batch->trusted);
    const std::array<std::string_view, 2> more{stamp_, trusted};
    batch->arguments.emplace(redis::detail::ScriptBatch::keys_of(batch_parts_, &renew_argv_, more, batch->trusted));
  } else {
    // Across slots only the lease keys go: the script names the rest.
    batch->arguments.emplace(across_slots ? redis::detail::ScriptBatch::args_of(batch_parts_, renew_argv_, 1)
                                          : redis::detail::ScriptBatch::keys_of(batch_parts_, &renew_argv_));
  }
  const redis::Script& script = batch->stamped  ? renew_stamped_batch_script()
                                : across_slots ? renew_node_script()
                                               : renew_batch_script();
  commands_.eval(script, *batch->arguments,
                 batch->renewals.front().slot,
                 [this, owner = owner_.lock(), batch, across_slots](error_code ec, redis::Reply reply,
                                                                   redis::Client* via) {
                   if (across_slots) return answer_node_batch(*batch, ec, std::move(reply), via);
                   answer_batch(*batch, ec, reply, via);
                 },
                 until);
}

// A group found clean at the stamp last read, and not trusted too often in
// a row: its holder record needs no reading while the stamp is unchanged.
bool RedisTransport::trusted(const GroupState& g) const noexcept {
  return stamp_number_ != 0 && g.clean_at_stamp == stamp_number_ && g.trusted_in_a_row < trusted_in_a_row_most;
}

// The trusted groups go first: the script renews them without their records.
std::size_t RedisTransport::put_trusted_first(std::vector<Renewal>& renewals) const {
  const auto first_untrusted = std::partition(renewals.begin(), renewals.end(),
                                              [this](const Renewal& r) { return trusted(*r.group); });
  return static_cast<std::size_t>(first_untrusted - renewals.begin());
}

// The stamp a reply read: a new one gets a new number, which no group is
// clean at yet; none (nil or "") forgets it.
void RedisTransport::note_stamp(const redis::Reply& stamp) {
  if (!stamp.is_string() || stamp.str.empty()) return forget_stamp();
  if (stamp.str == stamp_) return;
  stamp_ = stamp.str;
  if (++stamps_seen_ == 0) stamps_seen_ = 1;  // 0 names no stamp
  stamp_number_ = stamps_seen_;
}

// A look that found another holder, one this standby does not outrank,
// names the stamp it was found at (a fifth element, taken off here: the
// lease machine reads the usual refusal). Any other answer leaves the group
// untrusted: its next acquire reads the holder record.
void RedisTransport::read_refusal_stamp(GroupState& g, redis::Reply& reply, bool vouched) {
  auto& e = reply.elements;
  const bool clean = reply.is_array() && e.size() == 5 && e[0].is_integer() && e[0].integer == 0 &&
                     e[1].is_string() && !e[1].str.empty() && e[1].str != id_ && e[4].is_string();
  if (clean) {
    note_stamp(e[4]);
    e.pop_back();
  }
  mark_clean(g, clean, vouched);
}

// `clean`: found clean at the stamp last read; `trusted`: on that stamp's
// word, which counts towards the next full read. A full read that the count
// forced starts it again; any other (a changed stamp reads every group at
// once) starts it at the group's own place, so that the forced reads of a
// leader's groups stay spread over the heartbeats instead of all coming in
// one every sixteenth.
void RedisTransport::mark_clean(GroupState& g, bool clean, bool trusted) const noexcept {
  clean = clean && stamp_number_ != 0;
  if (clean && trusted) {
    ++g.trusted_in_a_row;
  } else {
    const bool forced = g.trusted_in_a_row >= trusted_in_a_row_most;
    g.trusted_in_a_row = forced ? 0 : static_cast<std::uint8_t>(g.stagger % trusted_in_a_row_most);
  }
  g.clean_at_stamp = clean ? stamp_number_ : 0;
}

// A trusted group's -1: the stamp had changed, so it was not renewed.
bool RedisTransport::went_unread(const Batch& batch, const redis::Reply& reply, std::size_t i) {
  return i < batch.trusted && reply.elements[i].is_integer() && reply.elements[i].integer == -1;
}

// A stamped batch's last answer is the stamp now: each group that answered 1
// is clean at it; one that answered -1 went on the word of a stamp that had
// changed, and goes again with every key (`again`).
void RedisTransport::read_stamp(const Batch& batch, const redis::Reply& reply, std::vector<Renewal>& again) {
  note_stamp(reply.elements.back());
  for (std::size_t i = 0; i < batch.renewals.size(); ++i) {
    GroupState& g = *batch.renewals[i].group;
    const redis::Reply& answer = reply.elements[i];
    const bool unread = went_unread(batch, reply, i);
    if (unread) again.push_back(batch.renewals[i]);
    mark_clean(g, answer.is_integer() && answer.integer == 1, i < batch.trusted && !unread);
  }
}

// The groups a changed stamp left unrenewed go again (read_stamp() no
// longer trusts them); the rest get their answers.
void RedisTransport::answer_stamped_again(const Batch& batch, const redis::Reply& reply, std::vector<Renewal> again,
                                          redis::Client* via) {
  Batch answered;
  std::vector<redis::Reply> answers;
  for (std::size_t i = 0; i < batch.renewals.size(); ++i) {
    if (went_unread(batch, reply, i)) continue;
    answered.renewals.push_back(batch.renewals[i]);
    answers.push_back(reply.elements[i]);
  }
  renew_many(std::move(again), false);
  if (!answered.renewals.empty()) answer_batch(answered, {}, redis::Reply::make_array(std::move(answers)), via);
}

void RedisTransport::forget_stamp() noexcept {
  stamp_.clear();
  stamp_number_ = 0;
}

// The groups of several slots: those the node no longer serves go again a
// slot at a time, where MOVED and ASK are followed; the rest are answered.
void RedisTransport::answer_node_batch(const Batch& batch, error_code ec, redis::Reply reply, redis::Client* via) {
  const auto& renewals = batch.renewals;
  if (reply.is_error()) {
    // Redirections and retries were followed below: a reply that is still
    // one gave up, and goes to the groups. Any other error: a server that
    // refuses the cross-slot script (before Redis 7.0, Redis-compatible
    // servers and managed services, each in its own words) will not take it
    // on this connection. One slot per script, declaring every key, from now on.
    using cluster::detail::ClusterError;
    const bool refused = cluster::detail::read_cluster_error(reply.str).kind == ClusterError::Kind::other;
    if (refused && node_batches_) {
      node_batches_ = false;
      log(LogLevel::warning, fmt::format("elector {}: {} refused the script that renews several slots' groups at "
                                         "once ({}); renewing one slot per script until it reconnects",
                                         id_, via != nullptr ? via->options().to_string() : "a cluster node",
                                         reply.str));
    }
    if (refused || !ec) return renew_by_slot(renewals);
  }
  const bool split = !ec && reply.is_array() && reply.elements.size() == renewals.size();
  if (!split || std::none_of(reply.elements.begin(), reply.elements.end(),
                             [](const redis::Reply& r) { return r.is_error(); })) {
    return answer_batch(batch, ec, reply, via);
  }
  Batch served;
  std::vector<redis::Reply> answers;
  std::vector<Renewal> elsewhere;
  for (std::size_t i = 0; i < renewals.size(); ++i) {
    if (reply.elements[i].is_error()) {
      elsewhere.push_back(renewals[i]);
    } else {
      served.renewals.push_back(renewals[i]);
      answers.push_back(std::move(reply.elements[i]));
    }
  }
  renew_by_slot(elsewhere);
  if (!served.renewals.empty()) answer_batch(served, ec, redis::Reply::make_array(std::move(answers)), via);
}

// `renewals` sorted by slot.
void RedisTransport::renew_by_slot(const std::vector<Renewal>& renewals) {
  for (auto next = renewals.begin(); next != renewals.end();) {
    const auto end = std::find_if(next, renewals.end(), [&](const Renewal& r) { return r.slot != next->slot; });
    if (end - next == 1) {
      renew_one(*next);
    } else {
      renew_many(std::vector<Renewal>(next, end), false);
    }
    next = end;
  }
}

// Each group gets its own answer; a failed call (or one that did not answer
// group by group) fails every group of it, as their own scripts would have.
void RedisTransport::answer_batch(const Batch& batch, error_code ec, const redis::Reply& reply,
                                  redis::Client* via) {
  const auto& renewals = batch.renewals;
  for (const Renewal& r : renewals) r.group->prefetch();
  // Each answer extends its group's published deadline: a second miss.
  for (const Renewal& r : renewals) detail::prefetch(r.group->flag.get());
  const bool split =
      !ec && reply.is_array() && reply.elements.size() == renewals.size() + (batch.stamped ? 1 : 0);
  // Not one answer per group: no group's own answer can be told apart.
  if (!ec && !split) ec = make_error_code(errc::unexpected_reply);
  if (split && batch.stamped) {
    std::vector<Renewal> again;
    read_stamp(batch, reply, again);
    if (!again.empty()) return answer_stamped_again(batch, reply, std::move(again), via);
  }
  const bool confirming = split && settings_.confirm_replicas > 0 &&
                          std::any_of(reply.elements.begin(), reply.elements.begin() + renewals.size(), lease_granted);
  if (!confirming) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < renewals.size(); ++i) {
      const Renewal& r = renewals[i];
      r.replies->on_lease_reply(*r.group, Command::renew, r.seq, ec, split ? reply.elements[i] : reply,
                                Replicated::not_asked, now);
    }
    return;
  }
  // Confirm mode: one WAIT vouches for every extension of the batch.
  auto answer = [renewals, reply](error_code wait_ec, bool enough, const redis::Reply& wait) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < renewals.size(); ++i) {
      const Renewal& r = renewals[i];
      const redis::Reply& mine = reply.elements[i];
      if (!lease_granted(mine)) {
        r.replies->on_lease_reply(*r.group, Command::renew, r.seq, {}, mine, Replicated::not_asked, now);
      } else if (wait_ec) {
        r.replies->on_lease_reply(*r.group, Command::renew, r.seq, wait_ec, wait, Replicated::not_asked, now);
      } else {
        r.replies->on_lease_reply(*r.group, Command::renew, r.seq, {}, mine,
                                  enough ? Replicated::enough : Replicated::too_few, now);
      }
    }
  };
  if (via == nullptr) return answer(make_error_code(errc::not_connected), false, redis::Reply{});
  wait_for_replicas(*via, settings_.confirm_replicas, settings_.confirm_timeout,
                    [this, owner = owner_.lock(), answer = std::move(answer)](error_code wait_ec, bool enough,
                                                                               const redis::Reply& wait) {
                      if (wait_ec && wait_was_refused(wait)) return answer({}, false, wait);
                      answer(wait_ec, enough, wait);
                    });
}

}  // namespace leasehold::detail
