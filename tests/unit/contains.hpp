#pragma once
// Whether a message contains a part, for the tests of error messages.

#include <string_view>

namespace leasehold::test {

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace leasehold::test
