#include <leasehold/redis/codec.hpp>

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include <array>
#include <new>
#include <vector>

namespace leasehold::redis {
namespace {

redisReader* as_reader(void* p) { return static_cast<redisReader*>(p); }

Reply convert(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING: return Reply::make_string(std::string(r.str, r.len));
    case REDIS_REPLY_STATUS: return Reply::make_status(std::string(r.str, r.len));
    case REDIS_REPLY_ERROR: return Reply::make_error(std::string(r.str, r.len));
    case REDIS_REPLY_INTEGER: return Reply::make_integer(r.integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) elements.push_back(convert(*r.element[i]));
      return Reply::make_array(std::move(elements));
    }
    default: return Reply{};  // REDIS_REPLY_NIL
  }
}

Error reader_error(const redisReader* r) {
  return {make_error_code(errc::protocol_error),
          fmt::format("invalid RESP from server: {}", r->errstr)};
}

}  // namespace

void encode_command(std::string& out, std::span<const std::string_view> args) {
  // redisFormatCommandArgv wants parallel arrays of pointers and lengths;
  // lease scripts have a handful of arguments, so avoid the heap for them.
  constexpr std::size_t inline_args = 16;
  std::array<const char*, inline_args> argv_inline;
  std::array<std::size_t, inline_args> len_inline;
  std::vector<const char*> argv_heap;
  std::vector<std::size_t> len_heap;
  const char** argv = argv_inline.data();
  std::size_t* argvlen = len_inline.data();
  if (args.size() > inline_args) {
    argv_heap.resize(args.size());
    len_heap.resize(args.size());
    argv = argv_heap.data();
    argvlen = len_heap.data();
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data();
    argvlen[i] = args[i].size();
  }
  char* encoded = nullptr;
  const int len = redisFormatCommandArgv(&encoded, static_cast<int>(args.size()), argv, argvlen);
  if (len < 0 || encoded == nullptr) throw std::bad_alloc();
  out.append(encoded, static_cast<std::size_t>(len));
  redisFreeCommand(encoded);
}

void ReplyDecoder::Deleter::operator()(void* reader) const noexcept {
  redisReaderFree(as_reader(reader));
}

ReplyDecoder::ReplyDecoder() : reader_(redisReaderCreate()) {
  if (!reader_) throw std::bad_alloc();
  // Keep hiredis from holding on to large buffers after a big reply.
  as_reader(reader_.get())->maxbuf = 64 * 1024;
}

ReplyDecoder::~ReplyDecoder() = default;
ReplyDecoder::ReplyDecoder(ReplyDecoder&&) noexcept = default;
ReplyDecoder& ReplyDecoder::operator=(ReplyDecoder&&) noexcept = default;

Error ReplyDecoder::feed(const char* data, std::size_t size) {
  auto* r = as_reader(reader_.get());
  if (r->err != 0 || redisReaderFeed(r, data, size) != REDIS_OK) return reader_error(r);
  return {};
}

std::optional<Reply> ReplyDecoder::next(Error& error) {
  auto* r = as_reader(reader_.get());
  void* raw = nullptr;
  if (r->err != 0 || redisReaderGetReply(r, &raw) != REDIS_OK) {
    error = reader_error(r);
    return std::nullopt;
  }
  if (raw == nullptr) return std::nullopt;
  std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                      freeReplyObject);
  return convert(*owned);
}

}  // namespace leasehold::redis
