#include <leasehold/redis/reply.hpp>

#include <fmt/format.h>

namespace leasehold::redis {
namespace {

void render(const Reply& r, std::string& out, std::size_t max_len) {
  if (out.size() >= max_len) return;
  switch (r.type) {
    case Reply::Type::nil: out += "(nil)"; break;
    case Reply::Type::integer: out += fmt::format("(integer) {}", r.integer); break;
    case Reply::Type::status: out += r.str; break;
    case Reply::Type::error: out += "(error) " + r.str; break;
    case Reply::Type::string: {
      out += '"';
      for (unsigned char c : r.str) {
        if (out.size() >= max_len) break;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
      }
      out += '"';
      break;
    }
    case Reply::Type::array: {
      out += '[';
      for (std::size_t i = 0; i < r.elements.size(); ++i) {
        if (i != 0) out += ", ";
        render(r.elements[i], out, max_len);
        if (out.size() >= max_len) break;
      }
      out += ']';
      break;
    }
  }
}

}  // namespace

std::string Reply::debug_string(std::size_t max_len) const {
  std::string out;
  render(*this, out, max_len);
  if (out.size() > max_len) {
    out.resize(max_len);
    out += "...";
  }
  return out;
}

}  // namespace leasehold::redis
