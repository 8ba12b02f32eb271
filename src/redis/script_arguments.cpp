#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis/script_arguments.hpp>

#include <array>
#include <charconv>
#include <string>
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
  count_ = argv.size();
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
