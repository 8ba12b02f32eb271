#pragma once
// The three Lua scripts of the lease model. No shebang line: without one,
// Redis checks maxmemory per command inside the script, so a re-claim
// (GET + PEXPIRE; its INCR through pcall) still works under OOM while a fresh
// SET fails loudly.

#include <leasehold/redis/script.hpp>

namespace leasehold::detail {

/// KEYS: lease key, fencing counter key. ARGV: instance id, ttl in ms.
/// Returns {acquired 0|1, holder id, holder's PTTL in ms, fencing token}.
/// Re-claims the key when it already holds this id, otherwise SET NX PX.
/// Either starts a term, so either increments the fencing counter; a
/// re-claim under maxmemory OOM (INCR refused) still re-seats the lease and
/// keeps the last token, so that leadership survives the episode.
const redis::Script& acquire_script();

/// acquire_script() with the empty-restart guard: when the group has no
/// fencing counter (a new group, or a Redis that lost its data), it creates
/// the counter at 0, seats an empty holder ("") with the ttl and answers
/// {0, "", ttl, 0}: nobody can take the group until that ttl has passed,
/// so a leader that still believes in a lease from before the data loss
/// sees its deadline pass first.
const redis::Script& guarded_acquire_script();

/// KEYS: lease key. ARGV: instance id, ttl in ms. Returns 1 if extended, 0
/// when the key is gone or held by another id.
const redis::Script& renew_script();

/// KEYS: lease key. ARGV: instance id, release channel. Deletes the key and
/// publishes the id on the channel only if the key holds this id; returns 1
/// then, else 0.
const redis::Script& release_script();

}  // namespace leasehold::detail
