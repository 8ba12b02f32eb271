#pragma once
// Tests' view of an Elector's implementation: its lifetime, not its API.

#include <leasehold/elector.hpp>

#include <memory>
#include <string>
#include <vector>

namespace leasehold::detail {

struct ElectorAccess {
  /// Expires once nothing holds the implementation any more.
  static std::weak_ptr<const void> lifetime(const Elector& elector) { return elector.impl_; }

  /// Elector::start_eval_confirmed as an Asio operation: void(error_code, Reply, bool confirmed).
  template <typename CompletionToken>
  static auto eval_confirmed(Elector& elector, const redis::Script& script, std::vector<std::string> keys,
                             std::vector<std::string> args, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, redis::Reply, bool)>(
        [&elector, &script](auto handler, std::vector<std::string> k, std::vector<std::string> a) {
          elector.start_eval_confirmed(script, std::move(k), std::move(a), std::move(handler));
        },
        token, std::move(keys), std::move(args));
  }
};

}  // namespace leasehold::detail
