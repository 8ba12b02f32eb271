// Pre-encoded script arguments produce, byte for byte, what encoding the
// whole EVALSHA or EVAL command at once produces.

#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis/script_arguments.hpp>
#include <leasehold/impl/protocol/script_batch.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace unit_script_arguments_test {
namespace {

namespace redis = leasehold::redis;

std::string whole(std::vector<std::string_view> argv) {
  std::string out;
  redis::encode_command(out, argv);
  return out;
}

TEST(ScriptArguments, EncodeTheSameBytesAsTheWholeCommand) {
  const redis::Script script("return {KEYS[1], ARGV[1]}");
  const std::string binary("a\0b\r\n", 5);
  const std::array<std::string_view, 2> keys{"leader:g1", "leader:g1:token"};
  const std::array<std::string_view, 3> args{"instance-1", "5000", binary};
  const redis::ScriptArguments arguments(keys, args);

  std::string by_sha;
  arguments.encode_call(by_sha, script, false);
  EXPECT_EQ(by_sha, whole({"EVALSHA", script.sha1(), "2", keys[0], keys[1], args[0], args[1], args[2]}));

  std::string by_body = "prefix";  // appends, keeps what was there
  arguments.encode_call(by_body, script, true);
  EXPECT_EQ(by_body, "prefix" + whole({"EVAL", script.body(), "2", keys[0], keys[1], args[0], args[1], args[2]}));
}

TEST(ScriptArguments, NoKeysAndManyArguments) {
  const redis::Script script("return #ARGV");
  std::vector<std::string> owned;
  for (int i = 0; i < 40; ++i) owned.push_back(std::to_string(i * 7919));
  const std::vector<std::string_view> args(owned.begin(), owned.end());
  const redis::ScriptArguments arguments({}, args);
  std::string out;
  arguments.encode_call(out, script, false);
  std::vector<std::string_view> argv{"EVALSHA", script.sha1(), "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(out, whole(argv));
}

TEST(ScriptArguments, SharedTrailingArgumentsFollowTheOwnOnesAsIfEncodedTogether) {
  const redis::Script script("return ARGV");
  const std::array<std::string_view, 3> shared_args{"instance-1", "5000", "0123456789abcdef"};
  const redis::SharedArguments shared(shared_args);
  const std::array<std::string_view, 2> keys{"leader:g1", "leader:g1:holder"};
  const std::array<std::string_view, 1> own{"own"};
  const redis::ScriptArguments with_own(keys, own, &shared);
  const redis::ScriptArguments keys_only(keys, {}, &shared);

  std::string out;
  with_own.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "2", keys[0], keys[1], "own", "instance-1", "5000",
                        "0123456789abcdef"}));
  out.clear();
  keys_only.encode_call(out, script, true);
  EXPECT_EQ(out, whole({"EVAL", script.body(), "2", keys[0], keys[1], "instance-1", "5000", "0123456789abcdef"}));
}

TEST(ScriptArguments, KeysAreReadBackAsGivenBinaryOnesToo) {
  const std::string binary("k\r\n\0$3", 6);
  const std::array<std::string_view, 3> keys{"leader:{g1}", binary, ""};
  const std::array<std::string_view, 1> args{"not a key"};
  const redis::ScriptArguments arguments(keys, args);
  EXPECT_EQ(arguments.key(0), "leader:{g1}");
  EXPECT_EQ(arguments.key(1), binary);
  EXPECT_EQ(arguments.key(2), "");
  EXPECT_EQ(arguments.key(3), "");  // past the keys: ARGV is not a key
}

TEST(ScriptArguments, KeysOfSeveralCallsEncodeAsTheWholeBatchCommand) {
  const redis::Script script("return #KEYS");
  const std::array<std::string_view, 2> shared_args{"instance-1", "5000"};
  const redis::SharedArguments shared(shared_args);
  const std::array<std::string_view, 1> own_args{"dropped"};
  const std::array<std::string_view, 2> first_keys{"leader:{a}", "leader:{a}:holder"};
  const std::array<std::string_view, 3> second_keys{"leader:{bb}", "leader:{bb}:holder", "leader:{bb}:bid"};
  const redis::ScriptArguments first(first_keys, own_args, &shared);
  const redis::ScriptArguments second(second_keys, {});
  const std::array<const redis::ScriptArguments*, 2> parts{&first, &second};
  const redis::ScriptArguments batch = redis::detail::ScriptBatch::keys_of(parts, &shared);
  std::string out;
  batch.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "5", first_keys[0], first_keys[1], second_keys[0], second_keys[1],
                        second_keys[2], shared_args[0], shared_args[1]}));
  EXPECT_EQ(batch.key(2), "leader:{bb}");
  EXPECT_EQ(batch.key(4), "leader:{bb}:bid");
  EXPECT_EQ(batch.key(5), "");  // the shared ARGV after the keys is not a key

  // A batch is a part like any other: its keys end where its own ARGV begins.
  const std::array<const redis::ScriptArguments*, 2> again{&batch, &first};
  const redis::ScriptArguments nested = redis::detail::ScriptBatch::keys_of(again, nullptr);
  out.clear();
  nested.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "7", first_keys[0], first_keys[1], second_keys[0], second_keys[1],
                        second_keys[2], first_keys[0], first_keys[1]}));

  const redis::ScriptArguments none = redis::detail::ScriptBatch::keys_of({}, nullptr);
  out.clear();
  none.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "0"}));
}

// A stamped renewal batch: the groups' keys and the stamp's key, then the
// shared ARGV and this batch's own (the stamp last read, how many trusted).
TEST(ScriptArguments, KeysOfSeveralCallsTakeArgumentsOfTheirOwnAfterTheShared) {
  const redis::Script script("return #ARGV");
  const std::array<std::string_view, 2> shared_args{"instance-1", "5000"};
  const redis::SharedArguments shared(shared_args);
  const std::array<std::string_view, 2> group_keys{"leader:a", "leader:a:holder"};
  const std::array<std::string_view, 1> stamp_key{"leader::holder"};
  const redis::ScriptArguments group(group_keys, {}, &shared);
  const redis::ScriptArguments stamp(stamp_key, {});
  const std::array<const redis::ScriptArguments*, 2> parts{&group, &stamp};
  const std::array<std::string_view, 2> more{"1733.5#7", "1"};
  const redis::ScriptArguments batch = redis::detail::ScriptBatch::keys_of(parts, &shared, more);
  std::string out;
  batch.encode_call(out, script, true);
  EXPECT_EQ(out, whole({"EVAL", script.body(), "3", group_keys[0], group_keys[1], stamp_key[0], shared_args[0],
                        shared_args[1], more[0], more[1]}));
  EXPECT_EQ(batch.key(2), "leader::holder");
  EXPECT_EQ(batch.key(3), "");
  // An empty argument (no stamp read yet) is an argument all the same.
  const std::array<std::string_view, 2> none{"", "0"};
  out.clear();
  redis::detail::ScriptBatch::keys_of(parts, &shared, none).encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "3", group_keys[0], group_keys[1], stamp_key[0], shared_args[0],
                        shared_args[1], "", "0"}));
  // Lean parts (groups renewed on the stamp's word) give their first key only.
  const std::array<std::string_view, 2> other_keys{"leader:b", "leader:b:holder"};
  const redis::ScriptArguments other(other_keys, {}, &shared);
  const std::array<const redis::ScriptArguments*, 3> mixed{&group, &other, &stamp};
  out.clear();
  redis::detail::ScriptBatch::keys_of(mixed, &shared, more, 1).encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "4", group_keys[0], other_keys[0], other_keys[1], stamp_key[0],
                        shared_args[0], shared_args[1], more[0], more[1]}));
}

TEST(ScriptArguments, ArgsOfSeveralCallsPutTheSharedArgumentsFirstAndNoKeys) {
  const redis::Script script("return #ARGV");
  const std::array<std::string_view, 2> shared_args{"instance-1", "5000"};
  const redis::SharedArguments shared(shared_args);
  const std::array<std::string_view, 2> first_keys{"leader:{a}", "leader:{a}:holder"};
  const std::array<std::string_view, 1> second_keys{"leader:{bb}"};
  const redis::ScriptArguments first(first_keys, {}, &shared);
  const redis::ScriptArguments second(second_keys, {});
  const std::array<const redis::ScriptArguments*, 2> parts{&first, &second};
  const redis::ScriptArguments batch = redis::detail::ScriptBatch::args_of(parts, shared);
  std::string out;
  batch.encode_call(out, script, true);
  EXPECT_EQ(out, whole({"EVAL", script.body(), "0", shared_args[0], shared_args[1], first_keys[0], first_keys[1],
                        second_keys[0]}));
  EXPECT_EQ(batch.key(0), "");  // no KEYS

  // Only each part's first key (the renewal across slots: the script names
  // the rest), and none beyond a part's own count.
  const redis::ScriptArguments leases = redis::detail::ScriptBatch::args_of(parts, shared, 1);
  out.clear();
  leases.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "0", shared_args[0], shared_args[1], first_keys[0], second_keys[0]}));
  const redis::ScriptArguments two = redis::detail::ScriptBatch::args_of(parts, shared, 2);
  out.clear();
  two.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "0", shared_args[0], shared_args[1], first_keys[0], first_keys[1],
                        second_keys[0]}));
  const redis::ScriptArguments no_keys = redis::detail::ScriptBatch::args_of(parts, shared, 0);
  out.clear();
  no_keys.encode_call(out, script, false);
  EXPECT_EQ(out, whole({"EVALSHA", script.sha1(), "0", shared_args[0], shared_args[1]}));
}

}  // namespace
}  // namespace unit_script_arguments_test
