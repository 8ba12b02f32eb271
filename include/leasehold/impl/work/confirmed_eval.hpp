#pragma once
// The scheduler's tick records claim through the elector's own connection,
// with confirm mode's WAIT: Elector::start_eval_confirmed, which is not
// public API, as an Asio operation.

#include <leasehold/elector.hpp>

#include <boost/asio/async_result.hpp>

#include <string>
#include <utility>
#include <vector>

namespace leasehold::detail {

struct ConfirmedEval {
  /// void(error_code, Reply, bool confirmed).
  template <typename CompletionToken>
  static auto run(Elector& elector, const redis::Script& script, std::vector<std::string> keys,
                  std::vector<std::string> args, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, redis::Reply, bool)>(
        [&elector, &script](auto handler, std::vector<std::string> k, std::vector<std::string> a) {
          elector.start_eval_confirmed(script, std::move(k), std::move(a), std::move(handler));
        },
        token, std::move(keys), std::move(args));
  }
};

}  // namespace leasehold::detail
