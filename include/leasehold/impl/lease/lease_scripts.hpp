#pragma once
// The Lua scripts of the lease model. No shebang line: without one, Redis
// checks maxmemory per command inside the script, so a re-claim (GET +
// PEXPIRE; its INCR through pcall) still works under OOM while a fresh SET
// fails loudly.
//
// Beside the lease key (value: the holder's instance id) each group has a
// holder record, a hash {incarnation, priority, bid} naming the process that
// holds the lease (ids can be duplicated by mistake, incarnations cannot),
// its priority and whether a bid may stand ('1'), and a bid, a hash {id, incarnation, priority} with a ttl, where a
// standby asks the leader to hand over.

#include <leasehold/key_layout.hpp>
#include <leasehold/redis/script.hpp>

#include <cstddef>
#include <cstdint>

namespace leasehold::detail {

/// KEYS: lease, fencing counter, holder record, bid. ARGV: instance id, ttl
/// in ms, incarnation, priority.
/// Returns {acquired 0|1, holder id, holder's PTTL in ms, fencing token} and,
/// when another incarnation of this id holds the lease, that incarnation as
/// a fifth element.
/// Re-claims the key when this incarnation holds it, otherwise SET NX PX.
/// Either starts a term, so either increments the fencing counter; a
/// re-claim under maxmemory OOM (INCR refused) still re-seats the lease and
/// keeps the last token, so that leadership survives the episode. A refused
/// standby that outranks the holder (or is another incarnation of its id)
/// leaves a bid. `take_over`: the variant that re-claims a lease held under
/// this id by another incarnation too (ElectorOptions::reclaim_on_restart,
/// for a process's first attempt only). `stamped`: the variant for one
/// endpoint with plain keys, whose last key is the change stamp
/// (KeyLayout::change_stamp_key), replaced by every acquire that changes
/// the holder record's incarnation or raises its bid flag. Its ARGV has a
/// fifth: the stamp that the caller's last refusal named ("" for none).
/// While the stamp is still that, the holder record needs no reading. A
/// refusal naming another holder that this standby does not outrank has
/// the stamp now as a fifth element.
const redis::Script& acquire_script(bool take_over = false, bool stamped = false);

/// acquire_script() with the empty-restart guard. KEYS: as acquire_script(),
/// then the data marker (KeyLayout::data_marker_key). When the group has
/// no fencing counter (a new group, or a Redis that lost its data) and the
/// marker does not prove that this server (its run_id and replication id)
/// has kept its data for at least one ttl, it creates the counter at 0,
/// seats an empty holder ("") until one ttl past the marker's time (writing
/// the marker now if it was missing or another server's) and answers {0,
/// "", that wait, 0}: nobody can take the group until then, so a leader
/// that still believes in a lease from before the data loss sees its
/// deadline pass first. Where INFO or TIME is refused in scripts, the wait
/// is one ttl and the answer has a 5th element saying why.
const redis::Script& guarded_acquire_script(bool take_over = false, bool stamped = false);

/// KEYS and ARGV as acquire_script(). Returns 1 when extended, {1, bidder
/// id, bidder incarnation, bidder priority} when extended with another
/// incarnation's bid standing, 0 when the key is gone or held by another
/// id, {0, incarnation} when another incarnation of this id holds it. The
/// common answers are integers: no array to allocate per renewal.
const redis::Script& renew_script();

/// Renews several groups in one call. KEYS: each group's four keys in turn,
/// as renew_script() takes them (the counter key unused; on a cluster all in
/// one slot). ARGV: instance id, ttl in ms, incarnation. Answers an array:
/// each group's renew_script() answer, in order.
const redis::Script& renew_batch_script();
inline constexpr std::size_t renew_batch_keys_per_group = 4;

/// renew_batch_script() for one endpoint with plain keys, where every
/// script that changes a holder record replaces the change stamp
/// (acquire_script(), hand_over_script(), `stamped`). ARGV: instance id,
/// ttl in ms, incarnation, the stamp the caller last read ("" for none) and
/// how many of the groups, the first ones, answered 1 at that stamp. KEYS:
/// those groups' lease keys, then the other groups' four keys each, then
/// the stamp. One MGET reads the stamp and every lease key. While the stamp
/// has not changed, the first groups' holder records need no reading (a
/// PEXPIRE each renews them); once it changed, they answer -1: not renewed,
/// to be sent again with every key. Answers each group's renew_script()
/// answer (or -1), then the stamp now (nil when there is none): a group
/// that answers 1 is clean at it. Serves one group as well as many.
const redis::Script& renew_stamped_batch_script();

/// The same for groups in several slots that one cluster node serves
/// (Redis 7.0 and later: the allow-cross-slot-keys flag). No KEYS, as a
/// script's declared keys must share a slot. ARGV: instance id, ttl in ms,
/// incarnation, then each group's lease key: the script names the holder
/// record and the bid after it (KeyLayout's suffixes), so that a renewal
/// sends a quarter of the bytes. A group whose keys the node
/// does not serve (its slot moved, or is moving) gets an error reply in
/// its place; the others are renewed all the same.
const redis::Script& renew_node_script();

/// Writes the data marker (KeyLayout::data_marker_key) of several slots
/// that one cluster node serves, where it is missing or names another
/// server, as guarded_acquire_script() would on a group's first acquire:
/// a group new to a slot is then taken at once from one ttl after this,
/// instead of waiting one ttl from its own first look (Redis 7.0 and
/// later: the allow-cross-slot-keys flag). No KEYS; ARGV: the markers.
/// Answers {written, other type, unserved}: markers written now, keys of
/// another type in a marker's place (left alone: the guard then waits one
/// ttl), and markers of slots the node does not serve now (moved, moving,
/// or not yet its own after a restart); {-1, why} where INFO or TIME is
/// refused in scripts.
const redis::Script& mark_slots_script();

/// How a release notice is sent: PUBLISH of the releaser's id (the plain
/// layout: one server, Sentinel), SPUBLISH to the channel of the group's
/// slot (Redis Cluster), or PUBLISH of what SPUBLISH would send (the
/// hash-tagged layout on one endpoint, whose groups share their slot's
/// channel too; KeyLayout::release_channel).
enum class Notices : std::uint8_t { published, sharded, published_tagged };

/// The notices of an elector on a Redis Cluster (`cluster`) or not, with
/// keys in `form`.
Notices notices_for(bool cluster, KeyLayout::Form form) noexcept;

/// KEYS: lease, holder record. ARGV: instance id, release channel,
/// incarnation ("" for any: an operator acting as the id). Deletes the key
/// and publishes the id on the channel (sharded, published_tagged: the lease
/// key, a newline and the id; KeyLayout::release_channel) only if the key holds this id
/// (and incarnation); returns 1 then, else 0.
const redis::Script& release_script(Notices notices = Notices::published);

/// KEYS: lease, holder record. ARGV: instance id, release channel,
/// incarnation, then the bidder's id, incarnation and priority, and the ttl
/// in ms. As release_script(), but instead of deleting the key it seats the
/// bidder as holder for one ttl (the bidder's next acquire re-claims it, a
/// new term), so that no other standby can slip in between. `stamped`: KEYS
/// end with the change stamp (one endpoint, plain keys: `notices` is then
/// published).
const redis::Script& hand_over_script(Notices notices = Notices::published, bool stamped = false);

}  // namespace leasehold::detail
