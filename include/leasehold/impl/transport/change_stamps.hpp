#pragma once
// The change stamps an elector last read (lease_scripts.hpp): one server's
// one, or each Cluster slot's. A stamp read gets a number that no other
// stamp of this elector had, which groups keep instead of the value (a
// group found clean at number N needs its holder record read again once its
// slot's stamp has another number).

#include <leasehold/key_layout.hpp>
#include <leasehold/redis/reply.hpp>
#include <leasehold/redis/script_arguments.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace leasehold::detail {

class ChangeStamps {
 public:
  struct Stamp {
    explicit Stamp(const std::string& key_name)
        : key(std::array<std::string_view, 1>{key_name}, {}), name(key_name) {}
    std::string value;           ///< as last read; "" for none
    std::uint32_t number = 0;    ///< 0 for none
    redis::ScriptArguments key;  ///< the stamp's key, encoded as a batch's last KEYS part
    std::string name;            ///< ... and as it is
  };

  explicit ChangeStamps(KeyLayout layout) : layout_(std::move(layout)) {}

  /// The stamp of `slot` (0 on one server), whose groups include `group`.
  Stamp& of(std::uint16_t slot, std::string_view group) {
    auto found = stamps_.find(slot);
    if (found == stamps_.end()) found = stamps_.try_emplace(slot, layout_.change_stamp_key(group)).first;
    return found->second;
  }
  /// The stamp of `slot` if one was ever read there.
  const Stamp* find(std::uint16_t slot) const noexcept {
    const auto found = stamps_.find(slot);
    return found == stamps_.end() ? nullptr : &found->second;
  }

  /// The stamp a reply read (nil or "" forgets it); its number.
  std::uint32_t note(Stamp& stamp, const redis::Reply& read) {
    if (!read.is_string() || read.str.empty()) {
      forget(stamp);
      return 0;
    }
    if (read.str == stamp.value) return stamp.number;
    stamp.value = read.str;
    if (++seen_ == 0) seen_ = 1;  // 0 names no stamp
    stamp.number = seen_;
    return stamp.number;
  }

  /// A connection came up: every stamp is read again before it vouches.
  void forget_all() noexcept {
    for (auto& [slot, stamp] : stamps_) forget(stamp);
  }

 private:
  static void forget(Stamp& stamp) noexcept {
    stamp.value.clear();
    stamp.number = 0;
  }

  const KeyLayout layout_;
  std::unordered_map<std::uint16_t, Stamp> stamps_;
  std::uint32_t seen_ = 0;
};

}  // namespace leasehold::detail
