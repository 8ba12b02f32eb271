#include "support/cluster_topology.hpp"

#include "support/node_probe.hpp"
#include "support/process.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace leasehold::test {

namespace {

using namespace std::chrono_literals;
using leasehold::redis::Reply;

constexpr int slot_count = 16384;
constexpr auto start_timeout = 20s;
constexpr auto create_timeout = 60s;      // redis-cli --cluster create, start to end
constexpr auto probe_timeout = 1000ms;    // one question while waiting
constexpr auto command_timeout = 5000ms;  // one step of an operation (MIGRATE included)
constexpr std::size_t keys_per_migrate = 100;
const std::string loopback = "127.0.0.1";

// The field/value pairs of a flat RESP2 map (CLUSTER SHARDS entries).
std::map<std::string, const Reply*> map_fields(const Reply& reply) {
  std::map<std::string, const Reply*> fields;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    fields[reply.elements[i].str] = &reply.elements[i + 1];
  }
  return fields;
}

const Reply& required(const std::map<std::string, const Reply*>& fields, const std::string& name,
                      Reply::Type type, const std::string& where) {
  const auto it = fields.find(name);
  if (it == fields.end() || it->second->type != type) {
    throw std::runtime_error("ClusterTopology: " + where + " has no usable \"" + name + "\"");
  }
  return *it->second;
}

std::string read_tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  if (!in) return "(no log at " + path + ")\n";
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(std::move(line));
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

std::string describe_ranges(const std::vector<ClusterTopology::SlotRange>& ranges) {
  std::string out;
  for (const auto& range : ranges) {
    if (!out.empty()) out += ",";
    out += std::to_string(range.first) + "-" + std::to_string(range.last);
  }
  return out.empty() ? "no slots" : out;
}

void check_options(const ClusterTopologyOptions& options) {
  // redis-cli --cluster create refuses fewer than 3 masters.
  if (options.masters < 3 || options.replicas_per_master < 0 || options.node_timeout <= 0ms) {
    throw std::invalid_argument(
        "ClusterTopology: need masters >= 3, replicas_per_master >= 0 and a positive node_timeout");
  }
}

}  // namespace

ClusterTopology::ClusterTopology(ClusterTopologyOptions options) : options_(std::move(options)) {
  check_options(options_);
  start_nodes();
  read_ids();
  create_cluster();
  wait_until_settled(start_timeout);
}

ClusterTopology::~ClusterTopology() {
  // A paused node is killed like any other (SIGKILL works on a stopped process).
  nodes_.clear();
}

// --- Start ----------------------------------------------------------------------

std::vector<std::string> ClusterTopology::node_config() const {
  std::vector<std::string> config{"cluster-node-timeout " + std::to_string(options_.node_timeout.count()),
                                  // A replica's first (and, after a restart, every) sync starts at once.
                                  "repl-diskless-sync-delay 0",
                                  // CLUSTER SHARDS calls a replica "loading" while its replication
                                  // offset is 0; on an idle master only these pings move it (default
                                  // every 10 s).
                                  "repl-ping-replica-period 1"};
  if (!options_.password.empty()) config.push_back("masterauth " + config_quote(options_.password));
  config.insert(config.end(), options_.extra_config.begin(), options_.extra_config.end());
  return config;
}

void ClusterTopology::start_nodes() {
  const auto count = static_cast<std::size_t>(options_.masters) *
                     (1 + static_cast<std::size_t>(options_.replicas_per_master));
  RedisServerOptions node_options;
  node_options.cluster = true;
  node_options.password = options_.password;
  node_options.extra_config = node_config();
  nodes_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) nodes_.emplace_back(node_options);
  paused_.assign(count, false);
}

void ClusterTopology::read_ids() {
  ids_.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Reply reply = call(i, {"CLUSTER", "MYID"});
    if (!reply.is_string() || reply.str.empty()) {
      throw std::runtime_error("ClusterTopology: CLUSTER MYID on " + describe_node(i) + " answered " +
                               describe_reply(reply));
    }
    ids_.push_back(reply.str);
  }
}

void ClusterTopology::create_cluster() {
  std::vector<std::string> argv{"redis-cli", "--cluster", "create"};
  for (const auto& node : nodes_) argv.push_back(loopback + ":" + std::to_string(node.port()));
  argv.insert(argv.end(),
              {"--cluster-replicas", std::to_string(options_.replicas_per_master), "--cluster-yes"});
  std::vector<std::string> environment;
  // Not -a: the password stays off the command line.
  if (!options_.password.empty()) environment.push_back("REDISCLI_AUTH=" + options_.password);

  const std::string log = nodes_.front().dir() + "/cluster-create.log";
  Process redis_cli(std::move(argv), log, std::move(environment));
  const auto status = redis_cli.wait_exit(create_timeout);
  if (!status) {
    redis_cli.kill();
    throw std::runtime_error("ClusterTopology: redis-cli --cluster create did not finish within " +
                             std::to_string(create_timeout.count()) + " s:\n" + read_tail(log, 30) +
                             log_tails());
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("ClusterTopology: redis-cli --cluster create " + describe_wait_status(*status) +
                             ":\n" + read_tail(log, 30) + log_tails());
  }
}

// --- Nodes -------------------------------------------------------------------------

std::optional<std::size_t> ClusterTopology::index_of_port(std::uint16_t port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].port() == port) return i;
  }
  return std::nullopt;
}

std::string ClusterTopology::describe_node(std::size_t i) const {
  return "node " + std::to_string(i) + " (" + loopback + ":" + std::to_string(node(i).port()) + ")";
}

bool ClusterTopology::is_live(std::size_t i) const { return node(i).running() && !paused_.at(i); }

std::optional<std::size_t> ClusterTopology::first_live() const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (is_live(i)) return i;
  }
  return std::nullopt;
}

Reply ClusterTopology::call(std::size_t i, std::vector<std::string> args) const {
  const std::string command = args.size() > 1 && args[0] == "CLUSTER" ? args[0] + " " + args[1] : args.at(0);
  try {
    return node(i).admin(command_timeout).call(std::move(args));
  } catch (const std::exception& e) {
    throw std::runtime_error("ClusterTopology: " + command + " on " + describe_node(i) + ": " + e.what());
  }
}

void ClusterTopology::expect_ok(std::size_t i, std::vector<std::string> args) const {
  std::string command;
  for (const auto& arg : args) command += (command.empty() ? "" : " ") + arg;
  const Reply reply = call(i, std::move(args));
  if (!reply.is_status() || reply.str != "OK") {
    throw std::runtime_error("ClusterTopology: " + command + " on " + describe_node(i) + " answered " +
                             describe_reply(reply));
  }
}

// --- What the cluster reports ----------------------------------------------------------

std::vector<ClusterTopology::NodeView> ClusterTopology::view_from(std::size_t asked) const {
  const Reply reply = call(asked, {"CLUSTER", "SHARDS"});
  const std::string source = "CLUSTER SHARDS on " + describe_node(asked);
  if (!reply.is_array()) {
    throw std::runtime_error("ClusterTopology: " + source + " answered " + describe_reply(reply));
  }
  std::vector<NodeView> views;
  for (std::size_t s = 0; s < reply.elements.size(); ++s) {
    const std::string where = source + ", shard " + std::to_string(s);
    const auto shard = map_fields(reply.elements[s]);
    const Reply& slots = required(shard, "slots", Reply::Type::array, where);
    const Reply& nodes = required(shard, "nodes", Reply::Type::array, where);
    std::vector<SlotRange> ranges;
    for (std::size_t k = 0; k + 1 < slots.elements.size(); k += 2) {
      ranges.push_back(
          {static_cast<int>(slots.elements[k].integer), static_cast<int>(slots.elements[k + 1].integer)});
    }
    std::vector<NodeView> members;
    std::optional<std::size_t> master;
    for (std::size_t n = 0; n < nodes.elements.size(); ++n) {
      const std::string node_where = where + ", node " + std::to_string(n);
      const auto fields = map_fields(nodes.elements[n]);
      const auto port = required(fields, "port", Reply::Type::integer, node_where).integer;
      const auto index = index_of_port(static_cast<std::uint16_t>(port));
      if (!index) {
        throw std::runtime_error("ClusterTopology: " + node_where + " is on port " + std::to_string(port) +
                                 ", which is not a node of this topology");
      }
      NodeView view;
      view.index = *index;
      view.id = required(fields, "id", Reply::Type::string, node_where).str;
      view.master = required(fields, "role", Reply::Type::string, node_where).str == "master";
      view.health = required(fields, "health", Reply::Type::string, node_where).str;
      if (view.master) {
        view.slots = ranges;
        master = view.index;
      }
      members.push_back(std::move(view));
    }
    for (auto& view : members) {
      if (!view.master) view.replica_of = master;
      views.push_back(std::move(view));
    }
  }
  std::sort(views.begin(), views.end(),
            [](const NodeView& a, const NodeView& b) { return a.index < b.index; });
  return views;
}

std::vector<ClusterTopology::NodeView> ClusterTopology::nodes() const {
  std::string failures;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!is_live(i)) continue;
    try {
      return view_from(i);
    } catch (const std::exception& e) {
      failures += std::string("\n  ") + e.what();
    }
  }
  throw std::runtime_error("ClusterTopology: no live node described the cluster" +
                           (failures.empty() ? std::string(" (none is live)") : failures));
}

std::vector<std::size_t> ClusterTopology::masters() const {
  std::vector<std::size_t> out;
  for (const auto& view : nodes()) {
    if (view.master && !view.slots.empty()) out.push_back(view.index);
  }
  return out;
}

std::string ClusterTopology::url() const {
  std::string out = "redis-cluster://";
  for (const std::size_t m : masters()) {
    if (out.back() != '/') out += ',';
    out += "127.0.0.1:" + std::to_string(node(m).port());
  }
  return out;
}

std::vector<std::size_t> ClusterTopology::replicas_of(std::size_t master) const {
  std::vector<std::size_t> out;
  for (const auto& view : nodes()) {
    if (view.replica_of == master) out.push_back(view.index);
  }
  return out;
}

std::size_t ClusterTopology::master_of_slot(int slot) const {
  for (const auto& view : nodes()) {
    for (const auto& range : view.slots) {
      if (range.first <= slot && slot <= range.last) return view.index;
    }
  }
  throw std::runtime_error("ClusterTopology: no node serves slot " + std::to_string(slot));
}

int ClusterTopology::key_slot(std::string_view key) const {
  const auto asked = first_live();
  if (!asked) throw std::runtime_error("ClusterTopology: no live node to ask CLUSTER KEYSLOT");
  const Reply reply = call(*asked, {"CLUSTER", "KEYSLOT", std::string(key)});
  if (!reply.is_integer()) {
    throw std::runtime_error("ClusterTopology: CLUSTER KEYSLOT on " + describe_node(*asked) + " answered " +
                             describe_reply(reply));
  }
  return static_cast<int>(reply.integer);
}

bool ClusterTopology::reports_ok(std::size_t i) const {
  const auto reply = try_call(node(i).admin_options(probe_timeout), {"CLUSTER", "INFO"});
  return reply && reply->is_string() && info_field(reply->str, "cluster_state") == "ok";
}

bool ClusterTopology::has_master_role(std::size_t i) const {
  const auto reply = try_call(node(i).admin_options(probe_timeout), {"ROLE"});
  return reply && reply->is_array() && !reply->elements.empty() && reply->elements[0].str == "master";
}

bool ClusterTopology::replica_link_up(std::size_t i) const {
  const auto reply = try_call(node(i).admin_options(probe_timeout), {"INFO", "replication"});
  return reply && reply->is_string() && info_field(reply->str, "role") == "slave" &&
         info_field(reply->str, "master_link_status") == "up";
}

std::optional<std::vector<int>> ClusterTopology::agreed_owners(std::string& why) const {
  std::optional<std::vector<int>> agreed;
  std::size_t first = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!is_live(i)) continue;
    if (!reports_ok(i)) {
      why = describe_node(i) + " does not report cluster_state:ok";
      return std::nullopt;
    }
    std::vector<int> owners(slot_count, -1);
    try {
      for (const auto& view : view_from(i)) {
        for (const auto& range : view.slots) {
          std::fill(owners.begin() + range.first, owners.begin() + range.last + 1,
                    static_cast<int>(view.index));
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
      return std::nullopt;
    }
    if (!agreed) {
      agreed = std::move(owners);
      first = i;
      continue;
    }
    const auto differ = std::mismatch(owners.begin(), owners.end(), agreed->begin());
    if (differ.first != owners.end()) {
      const auto slot = differ.first - owners.begin();
      why = describe_node(i) + " says node " + std::to_string(*differ.first) + " serves slot " +
            std::to_string(slot) + ", " + describe_node(first) + " says node " +
            std::to_string(*differ.second);
      return std::nullopt;
    }
  }
  if (!agreed) why = "no node is live";
  return agreed;
}

void ClusterTopology::remember_owners(const std::vector<int>& owners) { owners_ = owners; }

std::vector<ClusterTopology::SlotRange> ClusterTopology::served_by(std::size_t i) const {
  std::vector<SlotRange> ranges;
  for (int slot = 0; slot < static_cast<int>(owners_.size()); ++slot) {
    if (owners_[static_cast<std::size_t>(slot)] != static_cast<int>(i)) continue;
    if (!ranges.empty() && ranges.back().last == slot - 1) {
      ranges.back().last = slot;
    } else {
      ranges.push_back({slot, slot});
    }
  }
  return ranges;
}

std::vector<int> ClusterTopology::wait_until_ok(std::chrono::milliseconds bound) {
  std::string why;
  std::optional<std::vector<int>> owners;
  if (!poll_until(bound, [&] { return (owners = agreed_owners(why)).has_value(); })) {
    throw std::runtime_error("ClusterTopology: the live nodes were not ok and agreeing within " +
                             std::to_string(bound.count()) + " ms (" + why + ")\n" + log_tails());
  }
  remember_owners(*owners);
  return *owners;
}

void ClusterTopology::wait_until_settled(std::chrono::milliseconds bound) {
  std::string why;
  const auto settled = [&] {
    const auto owners = agreed_owners(why);
    if (!owners) return false;
    if (std::count(owners->begin(), owners->end(), -1) > 0) {
      why = "some slots have no master";
      return false;
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!is_live(i)) {
        why = describe_node(i) + " is not running, or paused";
        return false;
      }
    }
    std::size_t masters_seen = 0;
    for (std::size_t asked = 0; asked < nodes_.size(); ++asked) {
      std::vector<NodeView> views;
      try {
        views = view_from(asked);
      } catch (const std::exception& e) {
        why = e.what();
        return false;
      }
      if (views.size() != nodes_.size()) {
        why = describe_node(asked) + " knows " + std::to_string(views.size()) + " of the nodes";
        return false;
      }
      masters_seen = 0;
      for (const auto& view : views) {
        if (view.health != "online") {
          why = describe_node(asked) + " sees " + describe_node(view.index) + " as " + view.health;
          return false;
        }
        if (!view.master || view.slots.empty()) continue;
        ++masters_seen;
        const auto replicas = std::count_if(views.begin(), views.end(), [&](const NodeView& other) {
          return other.replica_of == view.index;
        });
        if (replicas != options_.replicas_per_master) {
          why = describe_node(asked) + " sees " + std::to_string(replicas) + " replicas of " +
                describe_node(view.index);
          return false;
        }
      }
    }
    if (masters_seen != static_cast<std::size_t>(options_.masters)) {
      why = std::to_string(masters_seen) + " masters serve slots";
      return false;
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!has_master_role(i) && !replica_link_up(i)) {
        why = describe_node(i) + " is a replica whose link to its master is not up";
        return false;
      }
    }
    remember_owners(*owners);
    return true;
  };
  if (!poll_until(bound, settled)) {
    throw std::runtime_error("ClusterTopology: not settled within " + std::to_string(bound.count()) +
                             " ms (" + why + ")\n" + log_tails());
  }
}

// --- Faults ------------------------------------------------------------------------------

void ClusterTopology::kill(std::size_t i) {
  node(i).kill();
  paused_.at(i) = false;
}

void ClusterTopology::pause(std::size_t i) {
  node(i).pause();
  paused_.at(i) = true;
}

void ClusterTopology::resume(std::size_t i) {
  node(i).resume();
  paused_.at(i) = false;
}

void ClusterTopology::restart(std::size_t i) {
  paused_.at(i) = false;
  node(i).restart();
}

std::size_t ClusterTopology::wait_for_promotion(std::size_t old_master, std::chrono::milliseconds bound) {
  const std::vector<SlotRange> served = served_by(old_master);
  if (served.empty()) {
    throw std::logic_error("ClusterTopology::wait_for_promotion: " + describe_node(old_master) +
                           " served no slots when the harness last looked");
  }
  std::string why;
  std::optional<std::vector<int>> owners;
  std::size_t promoted = 0;
  const bool done = poll_until(bound, [&] {
    owners = agreed_owners(why);
    if (!owners) return false;
    const int owner = (*owners)[static_cast<std::size_t>(served.front().first)];
    for (const auto& range : served) {
      for (int slot = range.first; slot <= range.last; ++slot) {
        if ((*owners)[static_cast<std::size_t>(slot)] != owner) {
          why = "the slots split between nodes";
          return false;
        }
      }
    }
    if (owner < 0 || static_cast<std::size_t>(owner) == old_master) {
      why = "slot " + std::to_string(served.front().first) + " is still served by " +
            (owner < 0 ? std::string("nobody") : describe_node(old_master));
      return false;
    }
    promoted = static_cast<std::size_t>(owner);
    if (!has_master_role(promoted)) {
      why = describe_node(promoted) + " serves the slots but ROLE does not say master";
      return false;
    }
    return true;
  });
  if (!done) {
    throw std::runtime_error("ClusterTopology: no node took over " + describe_ranges(served) + " from " +
                             describe_node(old_master) + " within " + std::to_string(bound.count()) +
                             " ms (" + why + ")\n" + log_tails());
  }
  remember_owners(*owners);
  return promoted;
}

void ClusterTopology::failover(std::size_t replica, std::chrono::milliseconds bound) {
  std::optional<std::size_t> master;
  for (const auto& view : view_from(replica)) {
    if (view.index == replica) master = view.replica_of;
  }
  if (!master) {
    throw std::runtime_error("ClusterTopology::failover: " + describe_node(replica) +
                             " is not a replica of a master it knows");
  }
  wait_until_ok(bound);  // owners_ is now the current assignment
  const std::vector<SlotRange> served = served_by(*master);
  expect_ok(replica, {"CLUSTER", "FAILOVER"});

  std::string why;
  std::optional<std::vector<int>> owners;
  const bool done = poll_until(bound, [&] {
    owners = agreed_owners(why);
    if (!owners) return false;
    for (const auto& range : served) {
      for (int slot = range.first; slot <= range.last; ++slot) {
        if ((*owners)[static_cast<std::size_t>(slot)] != static_cast<int>(replica)) {
          why = "slot " + std::to_string(slot) + " is not served by " + describe_node(replica) + " yet";
          return false;
        }
      }
    }
    if (!has_master_role(replica)) {
      why = "ROLE on " + describe_node(replica) + " does not say master";
      return false;
    }
    try {
      for (const auto& view : view_from(replica)) {
        if (view.index == *master && view.replica_of != replica) {
          why = describe_node(*master) + " is not a replica of " + describe_node(replica) + " yet";
          return false;
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
      return false;
    }
    return true;
  });
  if (!done) {
    throw std::runtime_error("ClusterTopology: CLUSTER FAILOVER on " + describe_node(replica) +
                             " did not complete within " + std::to_string(bound.count()) + " ms (" + why +
                             ")\n" + log_tails());
  }
  remember_owners(*owners);
}

// --- Slot migration ---------------------------------------------------------------------

void ClusterTopology::begin_migration(int slot, std::size_t to) {
  if (slot < 0 || slot >= slot_count) {
    throw std::invalid_argument("ClusterTopology: no slot " + std::to_string(slot));
  }
  if (migrations_.count(slot) != 0) {
    throw std::logic_error("ClusterTopology: slot " + std::to_string(slot) + " is already migrating");
  }
  const std::size_t from = master_of_slot(slot);
  const auto serving = masters();
  if (from == to || std::find(serving.begin(), serving.end(), to) == serving.end()) {
    throw std::logic_error("ClusterTopology::begin_migration: " + describe_node(to) +
                           " is not a master other than the slot's (" + describe_node(from) + ")");
  }
  // Importing first: once the old master says ASK, the new one must accept.
  expect_ok(to, {"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", node_id(from)});
  expect_ok(from, {"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", node_id(to)});
  migrations_[slot] = {from, to};
}

std::size_t ClusterTopology::migrate_keys(int slot, std::size_t limit) {
  const auto it = migrations_.find(slot);
  if (it == migrations_.end()) {
    throw std::logic_error("ClusterTopology::migrate_keys: slot " + std::to_string(slot) +
                           " is not migrating");
  }
  const auto [from, to] = it->second;
  std::size_t moved = 0;
  while (moved < limit) {
    const std::size_t batch = std::min(keys_per_migrate, limit - moved);
    const Reply keys = call(from, {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(batch)});
    if (!keys.is_array()) {
      throw std::runtime_error("ClusterTopology: CLUSTER GETKEYSINSLOT on " + describe_node(from) +
                               " answered " + describe_reply(keys));
    }
    if (keys.elements.empty()) break;
    std::vector<std::string> migrate{"MIGRATE", loopback, std::to_string(node(to).port()),
                                     "",        "0",      std::to_string(command_timeout.count())};
    if (!options_.password.empty()) migrate.insert(migrate.end(), {"AUTH", options_.password});
    migrate.push_back("KEYS");
    for (const auto& key : keys.elements) migrate.push_back(key.str);
    const Reply reply = call(from, std::move(migrate));
    if (!reply.is_status() || reply.str != "OK") {
      throw std::runtime_error("ClusterTopology: MIGRATE of slot " + std::to_string(slot) + " from " +
                               describe_node(from) + " to " + describe_node(to) + " answered " +
                               describe_reply(reply));
    }
    moved += keys.elements.size();
  }
  return moved;
}

void ClusterTopology::finish_migration(int slot, std::chrono::milliseconds bound) {
  const auto it = migrations_.find(slot);
  if (it == migrations_.end()) {
    throw std::logic_error("ClusterTopology::finish_migration: slot " + std::to_string(slot) +
                           " is not migrating");
  }
  const auto [from, to] = it->second;
  // The new master first (it bumps its config epoch and claims the slot),
  // then the old one (it refuses while it still holds keys of the slot),
  // then the others, which would also learn it from gossip.
  std::vector<std::size_t> order{to, from};
  for (const std::size_t master : masters()) {
    if (master != to && master != from && is_live(master)) order.push_back(master);
  }
  for (const std::size_t i : order) {
    expect_ok(i, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", node_id(to)});
  }
  migrations_.erase(it);

  std::string why;
  std::optional<std::vector<int>> owners;
  const bool done = poll_until(bound, [&] {
    owners = agreed_owners(why);
    if (owners && (*owners)[static_cast<std::size_t>(slot)] != static_cast<int>(to)) {
      why = "slot " + std::to_string(slot) + " is not served by " + describe_node(to) + " yet";
      return false;
    }
    return owners.has_value();
  });
  if (!done) {
    throw std::runtime_error("ClusterTopology: after moving slot " + std::to_string(slot) + " to " +
                             describe_node(to) + " the nodes did not agree within " +
                             std::to_string(bound.count()) + " ms (" + why + ")\n" + log_tails());
  }
  remember_owners(*owners);
}

std::string ClusterTopology::log_tails(std::size_t lines) const {
  std::string out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    out +=
        "--- " + describe_node(i) + (paused_.at(i) ? ", paused" : "") + " ---\n" + nodes_[i].log_tail(lines);
  }
  return out;
}

}  // namespace leasehold::test
