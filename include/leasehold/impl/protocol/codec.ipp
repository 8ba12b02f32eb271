#include <leasehold/redis/codec.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <new>
#include <string_view>
#include <vector>

namespace leasehold::redis {

// hiredis 1.x bounds array headers itself (redisReader::maxelements); 0.14
// has no such field, so there createArray checks the count, which also lets
// the error name the rejected count.
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
#define LEASEHOLD_HIREDIS_MAXELEMENTS 1
using ElementCount = std::size_t;
#else
#define LEASEHOLD_HIREDIS_MAXELEMENTS 0
using ElementCount = int;
#endif

// hiredis's reader builds each reply through these functions. They make our
// Reply tree directly, each element in place in its parent's table: one
// allocation per array instead of a redisReply per element, and no second
// pass to copy the tree. They run inside C code: an exception must not
// leave them (nullptr tells hiredis the allocation failed).
struct detail::ReplyDecoder::State {
  redisReader* reader = nullptr;
  redisReplyObjectFunctions functions{};
  // The element count of a rejected array header, -1 while none was.
  long long rejected_elements = -1;
  // Room made for an array's elements before they arrive: every reply
  // leasehold asks for fits (a batch of renewals answers 64).
  static constexpr std::size_t reserved_elements = 1024;

  // hiredis makes an array's elements in order, depth first, and keeps only
  // the objects of the path it is filling: an element appended to its
  // parent's table stays where it is for as long as hiredis points at it.
  static void* place(const redisReadTask* task, Reply&& value) noexcept {
    try {
      if (task->parent == nullptr) return new Reply(std::move(value));
      auto& elements = static_cast<Reply*>(task->parent->obj)->elements;
      if (static_cast<std::size_t>(task->idx) != elements.size()) return nullptr;  // not in order: refuse
      return &elements.emplace_back(std::move(value));
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_string(const redisReadTask* task, char* text, std::size_t len) noexcept {
    try {
      std::string str(text, len);
      switch (task->type) {
        case REDIS_REPLY_ERROR: return place(task, Reply::make_error(std::move(str)));
        case REDIS_REPLY_STATUS: return place(task, Reply::make_status(std::move(str)));
        default: return place(task, Reply::make_string(std::move(str)));
      }
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_array(const redisReadTask* task, ElementCount elements) noexcept {
    if (static_cast<long long>(elements) > max_array_elements) {
      static_cast<State*>(task->privdata)->rejected_elements = static_cast<long long>(elements);
      return nullptr;  // hiredis makes this a sticky reader error
    }
    try {
      // RESP3 maps and sets (hiredis 1.x reads them even unasked) are arrays
      // too: a map's keys and values alternate. The table grows as elements
      // arrive: a header alone (up to max_array_elements, nested) must not
      // cost what its elements would.
      Reply array = Reply::make_array({});
      array.elements.reserve(std::min<std::size_t>(static_cast<std::size_t>(elements), reserved_elements));
      return place(task, std::move(array));
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_integer(const redisReadTask* task, long long value) noexcept {
    return place(task, Reply::make_integer(value));
  }
  static void* create_nil(const redisReadTask* task) noexcept { return place(task, Reply{}); }
#if LEASEHOLD_HIREDIS_MAXELEMENTS
  static void* create_double(const redisReadTask* task, double, char* text, std::size_t len) noexcept {
    return create_string(task, text, len);  // RESP3 only: its text, as sent
  }
  static void* create_bool(const redisReadTask* task, int value) noexcept {
    return place(task, Reply::make_integer(value != 0 ? 1 : 0));  // RESP3 only
  }
#endif
  static void free_reply(void* reply) noexcept { delete static_cast<Reply*>(reply); }  // hiredis frees roots only
};

Error detail::ReplyDecoder::reader_error() const {
  // hiredis reports both a count below -1 and one above its bound (our limit
  // on 1.x, INT_MAX on 0.14 before our own check runs) with this text, and
  // on 1.x it has already dropped the header, so the count itself is lost.
  static constexpr std::string_view hiredis_out_of_range = "Multi-bulk length out of range";
  std::string why;
  if (state_->rejected_elements >= 0) {
    why = fmt::format("an array header announces {} elements, more than the limit of {}",
                      state_->rejected_elements, max_array_elements);
  }
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

void detail::ReplyDecoder::Deleter::operator()(State* state) const noexcept {
  if (state->reader != nullptr) redisReaderFree(state->reader);
  delete state;
}

detail::ReplyDecoder::ReplyDecoder() : state_(new State) {
  auto& fn = state_->functions;
  fn.createString = &State::create_string;
  fn.createArray = &State::create_array;
  fn.createInteger = &State::create_integer;
  fn.createNil = &State::create_nil;
#if LEASEHOLD_HIREDIS_MAXELEMENTS
  fn.createDouble = &State::create_double;
  fn.createBool = &State::create_bool;
#endif
  fn.freeObject = &State::free_reply;
  auto* r = redisReaderCreateWithFunctions(&fn);
  if (r == nullptr) throw std::bad_alloc();
  state_->reader = r;
  r->privdata = state_.get();
#if LEASEHOLD_HIREDIS_MAXELEMENTS
  r->maxelements = max_array_elements;
#endif
  // Keep hiredis from holding on to large buffers after a big reply.
  r->maxbuf = 64 * 1024;
}

detail::ReplyDecoder::~ReplyDecoder() = default;
detail::ReplyDecoder::ReplyDecoder(ReplyDecoder&&) noexcept = default;
detail::ReplyDecoder& detail::ReplyDecoder::operator=(ReplyDecoder&&) noexcept = default;

Error detail::ReplyDecoder::feed(const char* data, std::size_t size) {
  auto* r = state_->reader;
  if (r->err != 0 || redisReaderFeed(r, data, size) != REDIS_OK) return reader_error();
  return {};
}

std::optional<Reply> detail::ReplyDecoder::next(Error& error) {
  auto* r = state_->reader;
  void* raw = nullptr;
  if (r->err != 0 || redisReaderGetReply(r, &raw) != REDIS_OK) {
    error = reader_error();
    return std::nullopt;
  }
  if (raw == nullptr) return std::nullopt;
  const std::unique_ptr<Reply> owned(static_cast<Reply*>(raw));
  return std::move(*owned);
}

}  // namespace leasehold::redis
