#pragma once
// Tests' view of an Elector's implementation: its lifetime, not its API
// (a friend of Elector for the tests alone).

#include <leasehold/elector.hpp>

#include <memory>

namespace leasehold::detail {

struct ElectorAccess {
  /// Expires once nothing holds the implementation any more.
  static std::weak_ptr<const void> lifetime(const Elector& elector) { return elector.impl_; }
};

}  // namespace leasehold::detail
