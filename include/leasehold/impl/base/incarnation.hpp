#pragma once
// An incarnation: a random name for one elector of one process. Instance
// ids are chosen by people and can be duplicated by mistake (a copied
// config); an incarnation cannot, so the lease scripts tell a restarted
// process, and a second live process with the same id, from the holder.

#include <string>

namespace leasehold::detail {

/// 16 random hex digits, fresh on every call.
std::string new_incarnation();

}  // namespace leasehold::detail
