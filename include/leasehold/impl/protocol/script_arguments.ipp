#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis/script_arguments.hpp>

#include <leasehold/impl/base/prefetch.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::redis {

SharedArguments::SharedArguments(std::span<const std::string_view> args) : count_(args.size()) {
  std::string command;
  encode_command(command, args);
  encoded_ = without_array_header(command);
}

ScriptArguments::ScriptArguments(std::span<const std::string_view> keys, std::span<const std::string_view> args,
                                 const SharedArguments* shared)
    : shared_(shared) {
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(1 + keys.size() + args.size());
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::string command;
  encode_command(command, argv);
  encoded_ = without_array_header(command);
  if (encoded_.size() > UINT32_MAX) throw std::length_error("script arguments longer than 4 GiB");
  count_ = static_cast<std::uint32_t>(argv.size());
  keys_end_ = static_cast<std::uint32_t>(find_keys_end());
}

namespace {

// The bulk string at `at` of an encoding of ours ("$<size>\r\n<bytes>\r\n"):
// its contents, and where the next one starts.
std::pair<std::string_view, std::size_t> bulk_at(std::string_view encoded, std::size_t at) {
  const std::size_t eol = encoded.find('\r', at);
  std::size_t size = 0;
  std::from_chars(encoded.data() + at + 1, encoded.data() + eol, size);
  return {encoded.substr(eol + 2, size), eol + 2 + size + 2};
}

// Where the bulk string `n` after the one at `at` starts.
std::size_t skip_bulks(std::string_view encoded, std::size_t at, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) at = bulk_at(encoded, at).second;
  return at;
}

}  // namespace

// numkeys comes first: its value, and where the first key starts.
std::pair<std::size_t, std::size_t> ScriptArguments::numkeys() const {
  const auto [numkeys, first] = bulk_at(encoded_, 0);
  std::size_t count = 0;
  std::from_chars(numkeys.data(), numkeys.data() + numkeys.size(), count);
  return {count, first};
}

std::size_t ScriptArguments::find_keys_end() const {
  const auto [count, first] = numkeys();
  return skip_bulks(encoded_, first, count);
}

std::pair<std::string_view, std::size_t> ScriptArguments::encoded_keys(std::size_t most) const {
  const auto [count, first] = numkeys();
  if (most >= count) return {std::string_view(encoded_).substr(first, keys_end_ - first), count};
  return {std::string_view(encoded_).substr(first, skip_bulks(encoded_, first, most) - first), most};
}

std::string_view ScriptArguments::key(std::size_t index) const {
  const auto [keys, count] = encoded_keys();
  if (index >= count) return {};
  return bulk_at(keys, skip_bulks(keys, 0, index)).first;
}

// numkeys, then the parts' keys as KEYS with `shared` after them, or no KEYS
// and `shared` copied ahead of the parts' keys. `more_args` (KEYS only)
// follow `shared`, which is then copied too. The first `lean_parts` parts
// give their first key only.
ScriptArguments ScriptArguments::joined(std::span<const ScriptArguments* const> parts, const SharedArguments* shared,
                                        bool as_keys, std::size_t keys_each,
                                        std::span<const std::string_view> more_args, std::size_t lean_parts) {
  for (const ScriptArguments* part : parts) leasehold::detail::prefetch(part->encoded_.data(), part->encoded_.size());
  std::size_t count = 0;
  std::size_t bytes = 0;
  std::vector<std::string_view> keys;  // each part's, found once
  keys.reserve(parts.size());
  for (const ScriptArguments* part : parts) {
    const auto [encoded, n] = part->encoded_keys(keys.size() < lean_parts ? 1 : keys_each);
    keys.push_back(encoded);
    count += n;
    bytes += encoded.size();
  }
  ScriptArguments out;
  const std::string numkeys = as_keys ? std::to_string(count) : "0";
  const std::string_view ahead = as_keys || shared == nullptr ? std::string_view() : shared->encoded_;
  out.encoded_.reserve(bytes + ahead.size() + numkeys.size() + 16);
  out.encoded_.append("$").append(std::to_string(numkeys.size())).append("\r\n").append(numkeys).append("\r\n");
  const std::size_t keys_end = out.encoded_.size() + (as_keys ? bytes : 0);
  out.encoded_.append(ahead);
  for (const std::string_view encoded : keys) out.encoded_.append(encoded);
  std::size_t argc = 1 + count;
  if (as_keys && more_args.empty()) {
    out.shared_ = shared;
  } else if (shared != nullptr) {
    if (as_keys) out.encoded_.append(shared->encoded_);
    argc += shared->count_;
  }
  for (const std::string_view arg : more_args) {
    out.encoded_.append("$").append(std::to_string(arg.size())).append("\r\n").append(arg).append("\r\n");
  }
  argc += more_args.size();
  if (out.encoded_.size() > UINT32_MAX) throw std::length_error("script arguments longer than 4 GiB");
  out.count_ = static_cast<std::uint32_t>(argc);
  out.keys_end_ = static_cast<std::uint32_t>(keys_end);
  return out;
}

void ScriptArguments::encode_call(std::string& out, const Script& script, bool by_body) const {
  std::array<char, 24> header;
  header[0] = '*';
  const std::size_t count = count_ + 2 + (shared_ != nullptr ? shared_->count_ : 0);
  char* end = std::to_chars(header.data() + 1, header.data() + header.size() - 2, count).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(header.data(), end);
  if (by_body) {
    out += encode_slots("EVAL", script.body());
  } else {
    out += script.evalsha_slots();
  }
  out += encoded_;
  if (shared_ != nullptr) out += shared_->encoded_;
}

}  // namespace leasehold::redis
