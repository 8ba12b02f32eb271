#include <leasehold/redis/codec.hpp>

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include <array>
#include <new>
#include <string_view>
#include <vector>

namespace leasehold::redis {

// hiredis 1.x bounds array headers itself (redisReader::maxelements); 0.14
// has no such field, so there the reply-function table's createArray is
// wrapped instead, which also lets the error name the rejected count.
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
#define LEASEHOLD_HIREDIS_MAXELEMENTS 1
#else
#define LEASEHOLD_HIREDIS_MAXELEMENTS 0
#endif

struct ReplyDecoder::State {
  redisReader* reader = nullptr;
#if !LEASEHOLD_HIREDIS_MAXELEMENTS
  // hiredis's reply functions with createArray bounded; the reader points at
  // this copy, and each task's privdata points back at this State.
  redisReplyObjectFunctions functions{};
  void* (*hiredis_create_array)(const redisReadTask*, int) = nullptr;
  // The element count of a rejected array header, -1 while none was.
  long long rejected_elements = -1;

  static void* create_bounded_array(const redisReadTask* task, int elements) {
    auto* self = static_cast<State*>(task->privdata);
    if (elements > max_array_elements) {
      self->rejected_elements = elements;
      return nullptr;  // hiredis makes this a sticky reader error
    }
    return self->hiredis_create_array(task, elements);
  }
#endif
};

namespace {

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

}  // namespace

Error ReplyDecoder::reader_error() const {
  // hiredis reports both a count below -1 and one above its bound (our limit
  // on 1.x, INT_MAX on 0.14 before our own check runs) with this text, and
  // on 1.x it has already dropped the header, so the count itself is lost.
  static constexpr std::string_view hiredis_out_of_range = "Multi-bulk length out of range";
  std::string why;
#if !LEASEHOLD_HIREDIS_MAXELEMENTS
  if (state_->rejected_elements >= 0) {
    why = fmt::format("an array header announces {} elements, more than the limit of {}",
                      state_->rejected_elements, max_array_elements);
  }
#endif
  if (why.empty()) {
    const std::string_view errstr = state_->reader->errstr;
    why = errstr == hiredis_out_of_range
              ? fmt::format("an array header announces an element count below -1 or above "
                            "the limit of {}",
                            max_array_elements)
              : std::string(errstr);
  }
  return {make_error_code(errc::protocol_error), "invalid RESP from server: " + why};
}

void encode_command(std::string& out, std::span<const std::string_view> args) {
  // hiredis wants parallel arrays of pointers and lengths;
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
  // The sds variant formats lengths itself; redisFormatCommandArgv calls
  // sprintf for each argument (a batch of renewals has hundreds).
  sds encoded = nullptr;
  const int len = redisFormatSdsCommandArgv(&encoded, static_cast<int>(args.size()), argv, argvlen);
  if (len < 0 || encoded == nullptr) throw std::bad_alloc();
  out.append(encoded, static_cast<std::size_t>(len));
  redisFreeSdsCommand(encoded);
}

void ReplyDecoder::Deleter::operator()(State* state) const noexcept {
  if (state->reader != nullptr) redisReaderFree(state->reader);
  delete state;
}

ReplyDecoder::ReplyDecoder() : state_(new State) {
  auto* r = redisReaderCreate();
  if (r == nullptr) throw std::bad_alloc();
  state_->reader = r;
#if LEASEHOLD_HIREDIS_MAXELEMENTS
  r->maxelements = max_array_elements;
#else
  state_->functions = *r->fn;
  state_->hiredis_create_array = r->fn->createArray;
  state_->functions.createArray = &State::create_bounded_array;
  r->fn = &state_->functions;
  r->privdata = state_.get();
#endif
  // Keep hiredis from holding on to large buffers after a big reply.
  r->maxbuf = 64 * 1024;
}

ReplyDecoder::~ReplyDecoder() = default;
ReplyDecoder::ReplyDecoder(ReplyDecoder&&) noexcept = default;
ReplyDecoder& ReplyDecoder::operator=(ReplyDecoder&&) noexcept = default;

Error ReplyDecoder::feed(const char* data, std::size_t size) {
  auto* r = state_->reader;
  if (r->err != 0 || redisReaderFeed(r, data, size) != REDIS_OK) return reader_error();
  return {};
}

std::optional<Reply> ReplyDecoder::next(Error& error) {
  auto* r = state_->reader;
  void* raw = nullptr;
  if (r->err != 0 || redisReaderGetReply(r, &raw) != REDIS_OK) {
    error = reader_error();
    return std::nullopt;
  }
  if (raw == nullptr) return std::nullopt;
  std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                      freeReplyObject);
  return convert(*owned);
}

}  // namespace leasehold::redis
