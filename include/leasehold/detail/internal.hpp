#pragma once
// A tag that only the library passes: constructors that take it are the
// library's own (a Term around its state, a Group around its flag, ...),
// kept out of the way of user code.

namespace leasehold::detail {

struct Internal {
  explicit Internal() = default;
};

}  // namespace leasehold::detail
