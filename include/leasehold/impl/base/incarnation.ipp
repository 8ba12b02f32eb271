#include <leasehold/impl/base/incarnation.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <random>

namespace leasehold::detail {

std::string new_incarnation() {
  std::random_device rd;
  const auto random = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  return fmt::format("{:016x}", random);
}

}  // namespace leasehold::detail
