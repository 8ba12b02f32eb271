#pragma once
// Options checked on their way into the object that keeps them, so that a
// constructor's member initializer can take them.

#include <utility>

namespace leasehold::detail {

/// `options` after options.validate() (which throws naming the field).
template <typename Options>
Options validated(Options options) {
  options.validate();
  return options;
}

}  // namespace leasehold::detail
