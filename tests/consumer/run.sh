#!/usr/bin/env bash
# Proves that leasehold can be installed and consumed the five ways a user
# would: builds and installs it into a fresh temporary prefix, then builds
# tests/consumer/app.cpp
#   1. as a CMake project with find_package(leasehold CONFIG REQUIRED),
#      against that prefix only;
#   2. as a CMake project that add_subdirectory()s the leasehold source tree;
#   3. as a CMake project that gets it with FetchContent from this Git
#      checkout at HEAD (a local path: no network);
#   4. as one file compiled with `pkg-config --cflags --libs leasehold`;
#   5. header-mostly: the installed headers plus one translation unit of
#      <leasehold/src.hpp>, with a bare compiler command (no CMake, no
#      libleasehold);
# and runs each against a private redis-server on a free loopback port (each
# must lead and stop cleanly), plus the installed `leasehold` CLI. When the
# build has the prometheus component, 1 to 3 also build and run
# prometheus_app.cpp with find_package(leasehold ... COMPONENTS prometheus).
# 1 to 3 also build and run guest/guest_app, a service with its own separately
# compiled Asio and deprecated Asio names; 1 compiles every installed public
# header alone. The installed package must impose no Asio macro, carry no
# test-only switch, and keep hiredis, OpenSSL, fmt and Boost.URL out of
# <leasehold/leasehold.hpp>. Against the prefix too: examples/getting_started,
# configured as a project of its own, must lead and stop on SIGTERM, and
# every block of README.md and docs/ marked `<!-- program -->` must compile
# and link (scripts/doc_programs.py extracts them).
#
#   tests/consumer/run.sh [BUILD_DIR]
#
# BUILD_DIR: an existing leasehold build directory to install from (only the
# library and the CLI are rebuilt there); default: a fresh Release build in the
# temporary directory. Everything else lives in a temporary directory that is
# removed on exit, with the server, whatever happens. Exits 0 on success.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${LEASEHOLD_JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-consumer.XXXXXX")
redis_pid=""
from_source_dirs=()

cleanup() {
  if [ -n "${app_pid:-}" ]; then
    kill -9 "$app_pid" 2>/dev/null || true
    wait "$app_pid" 2>/dev/null || true
  fi
  if [ -n "$redis_pid" ]; then
    kill -9 "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  local dir
  for dir in "${from_source_dirs[@]}"; do rm -rf "$dir"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { echo "== consumer: $*"; }
fail() { echo "consumer test FAILED: $*" >&2; exit 1; }

prefix=$work/prefix
build=${1:-}
if [ -n "$build" ]; then
  [ -f "$build/CMakeCache.txt" ] || fail "$build is not a CMake build directory"
  build=$(cd "$build" && pwd)
  targets=leasehold
  help=$(cmake --build "$build" --target help)
  for t in leasehold_cli leasehold_prometheus; do
    if grep -q "^$t:" <<<"$help"; then targets="$targets $t"; fi
  done
  step "building $targets in $build"
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$jobs" --target $targets
else
  build=$work/build
  step "configuring a fresh build in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLEASEHOLD_BUILD_TESTS=OFF -DLEASEHOLD_BUILD_EXAMPLES=OFF -DLEASEHOLD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$jobs"
fi

step "installing into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
# The layout a user relies on. The prefix-relative libdir depends on the
# platform (lib, lib64, lib/<triplet>), so look it up.
pc=$(find "$prefix" -name leasehold.pc -path '*/pkgconfig/*' | head -n1)
[ -n "$pc" ] || fail "no leasehold.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/leasehold/leasehold.hpp" "$prefix/include/leasehold/redis/client.hpp" \
         "$libdir/cmake/leasehold/leaseholdConfig.cmake" "$libdir/cmake/leasehold/leaseholdConfigVersion.cmake" \
         "$libdir/cmake/leasehold/leaseholdTargets.cmake"; do
  [ -e "$f" ] || fail "missing after install: ${f#"$prefix"/}"
done
ls "$libdir"/libleasehold.* >/dev/null 2>&1 || fail "no libleasehold in ${libdir#"$prefix"/}"
[ -e "$prefix/include/leasehold/config.hpp" ] || fail "missing after install: include/leasehold/config.hpp"
[ -z "$(find "$prefix/include" -name '*.in')" ] || fail "a configure template was installed: $(find "$prefix/include" -name '*.in')"
# A guest in the user's build: Asio's mode and deprecated names are the
# user's choice, and configuration travels in leasehold/config.hpp, never as
# a compile definition of the target or of the .pc file.
if grep -n "INTERFACE_COMPILE_DEFINITIONS" "$libdir"/cmake/leasehold/*.cmake; then
  fail "the installed targets impose compile definitions on their users"
fi
grep -n -- "-D" "$pc" && fail "leasehold.pc imposes compile definitions on its users"
grep -rn "UNSAFE" "$prefix/include" "$libdir/cmake/leasehold" "$pc" && fail "a test-only switch reached the installed package"
# The optional component is installed when prometheus-cpp was found at build time.
prometheus=OFF
if [ -e "$libdir/cmake/leasehold/leaseholdPrometheusTargets.cmake" ]; then
  prometheus=ON
  [ -e "$prefix/include/leasehold/prometheus/elector_collectable.hpp" ] \
    || fail "missing after install: include/leasehold/prometheus/elector_collectable.hpp"
fi

# Configures the CMake project $1 into $2 against the temporary prefix only
# (no package registry, no system copy), with the further cmake arguments given.
against_prefix() {
  local source=$1 dir=$2
  shift 2
  cmake -S "$source" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF "$@" >"$dir.log" 2>&1 \
    || { cat "$dir.log"; fail "configuring $source against $prefix"; }
}

step "consumer 1/5: find_package(leasehold CONFIG REQUIRED) (component prometheus: $prometheus)"
against_prefix "$root/tests/consumer" "$work/package" -DLEASEHOLD_CONSUMER_MODE=package \
  -DLEASEHOLD_CONSUMER_PROMETHEUS=$prometheus
grep -q "leasehold 0*[0-9].* from $libdir/cmake/leasehold" "$work/package.log" \
  || { cat "$work/package.log"; fail "find_package did not take leasehold from the temporary prefix"; }
cmake --build "$work/package" -j "$jobs"

# Ways 2 and 3 compile the library from source. With BUILD_DIR given, it is
# compiled as there (build type, warning and debug-info options), in a
# directory below the source tree: way 2 sees the sources at the same
# relative paths as BUILD_DIR does, and way 3's clone sits at a fixed path
# inside its directory, so ccache serves their files after the first run.
from_source_args=(-DCMAKE_BUILD_TYPE=Release)
from_source_base=$work
if [ -n "${1:-}" ]; then
  cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
  from_source_args=(-DCMAKE_BUILD_TYPE="$(cached CMAKE_BUILD_TYPE)" -DLEASEHOLD_WERROR="$(cached LEASEHOLD_WERROR)"
                    -DLEASEHOLD_DEBUG_INFO="$(cached LEASEHOLD_DEBUG_INFO)")
  from_source_base=$root/build
fi
from_source_targets="app guest_app"
[ "$prometheus" = ON ] && from_source_targets="app guest_app prometheus_app"
# Configures tests/consumer in way $1 (subdirectory, fetchcontent) into
# $from_source_base/consumer-$1-<pid>, with the further cmake arguments given,
# and builds its apps; the directory is removed on exit.
from_source() {
  local mode=$1 dir=$from_source_base/consumer-$1-$$
  shift
  from_source_dirs+=("$dir")
  cmake -S "$root/tests/consumer" -B "$dir" -G Ninja "${from_source_args[@]}" \
    -DLEASEHOLD_CONSUMER_MODE="$mode" -DLEASEHOLD_CONSUMER_PROMETHEUS=$prometheus "$@" >"$work/$mode.log" 2>&1 \
    || { cat "$work/$mode.log"; fail "configuring the $mode consumer"; }
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$jobs" --target $from_source_targets
}

step "consumer 2/5: add_subdirectory(leasehold source tree)"
from_source subdirectory -DLEASEHOLD_SOURCE_DIR="$root"
subdirectory=${from_source_dirs[-1]}

step "consumer 3/5: FetchContent of the Git checkout at HEAD ($(git -C "$root" rev-parse --short HEAD))"
# A local path is a Git URL too, so this runs offline; it builds what HEAD
# holds: commit a change before testing it this way.
[ -z "$(git -C "$root" status --porcelain --untracked-files=no)" ] \
  || echo "   (the checkout has uncommitted changes: way 3 builds HEAD without them)"
from_source fetchcontent -DLEASEHOLD_GIT_REPOSITORY="$root" -DLEASEHOLD_GIT_TAG="$(git -C "$root" rev-parse HEAD)"
fetchcontent=${from_source_dirs[-1]}

step "consumer 4/5: pkg-config --cflags --libs leasehold"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ "$(pkg-config --variable=prefix leasehold | xargs realpath)" = "$(realpath "$prefix")" ] \
  || fail "leasehold.pc does not point at the prefix it was installed to"
# shellcheck disable=SC2046
${CXX:-c++} -Wall -Wextra -Wpedantic -Werror -O1 "$root/tests/consumer/app.cpp" -o "$work/app-pkgconfig" \
  $(pkg-config --cflags --libs leasehold)

step "consumer 5/5: the installed headers and <leasehold/src.hpp>, one bare compiler command each"
# The header-mostly way (a Meson, Bazel or hand-written build): leasehold's
# code compiled in one translation unit of the program, then only leasehold's
# dependencies linked. guest_app does it beside its own separately compiled
# Asio, so that TU gets the program's Asio mode like every other.
printf '#include <leasehold/src.hpp>\n' >"$work/leasehold_src.cpp"
deps=(-lhiredis -lfmt -lboost_url -pthread)
# A program that compiles Asio separately compiles Asio's SSL part too when
# leasehold speaks TLS (Asio's own rule for asio::ssl users).
guest_asio=("$root"/tests/consumer/guest/{guest_app,legacy,asio_impl}.cpp)
if grep -q '^#define LEASEHOLD_HAS_TLS 1' "$prefix/include/leasehold/config.hpp"; then
  deps+=(-lssl -lcrypto)
  printf '#include <boost/asio/ssl/impl/src.hpp>\n' >"$work/asio_ssl.cpp"
  guest_asio+=("$work/asio_ssl.cpp")
fi
# -O0: these check that the program compiles and links, and the optimiser
# would triple the time of the two whole-library compiles, which run side by side.
bare=(${CXX:-g++} -std=c++20 -Wall -Wextra -Wpedantic -Werror -O0 -I"$prefix/include")
"${bare[@]}" "$root/tests/consumer/app.cpp" "$work/leasehold_src.cpp" -o "$work/app-src-hpp" "${deps[@]}" \
  >"$work/app-src-hpp.log" 2>&1 &
app_pid=$!
"${bare[@]}" -DBOOST_ASIO_SEPARATE_COMPILATION "${guest_asio[@]}" "$work/leasehold_src.cpp" -o "$work/guest-src-hpp" "${deps[@]}" \
  >"$work/guest-src-hpp.log" 2>&1 \
  || { cat "$work/guest-src-hpp.log"; fail "building guest_app (its own Asio TU) with <leasehold/src.hpp>"; }
wait "$app_pid" || { cat "$work/app-src-hpp.log"; fail "building app with <leasehold/src.hpp>"; }

step "examples/getting_started as a project of its own, against the prefix"
against_prefix "$root/examples/getting_started" "$work/getting_started"
cmake --build "$work/getting_started" -j "$jobs"

step "every <!-- program --> block of the Markdown docs, against the prefix"
# One executable per block; a compile error names the Markdown file and line.
python3 "$root/scripts/doc_programs.py" extract "$root" "$work/doc_programs" >"$work/doc_programs.list"
[ -s "$work/doc_programs.list" ] || fail "no <!-- program --> block in README.md or docs/ (the README has one)"
sed 's/^/   /' "$work/doc_programs.list"
against_prefix "$work/doc_programs" "$work/doc_programs/build"
cmake --build "$work/doc_programs/build" -j "$jobs" -- -k 0 \
  || fail "a program block of the docs does not compile or link: the messages above name its Markdown file and line"

step "<leasehold/leasehold.hpp> reaches none of hiredis, OpenSSL, fmt, Boost.URL"
# Every header the umbrella header pulls in, as the compiler finds them.
# shellcheck disable=SC2046
echo '#include <leasehold/leasehold.hpp>' \
  | ${CXX:-c++} -std=c++20 -M $(pkg-config --cflags leasehold) -x c++ - -o "$work/umbrella.d" \
  || fail "listing the headers <leasehold/leasehold.hpp> includes"
grep -q "/include/leasehold/elector.hpp" "$work/umbrella.d" || fail "the header list of <leasehold/leasehold.hpp> looks wrong"
reached=$(tr ' \\' '\n\n' <"$work/umbrella.d" | grep -E '(^|/)(hiredis|openssl|fmt)/|/boost/url[/.]' | sort -u || true)
[ -z "$reached" ] || fail "<leasehold/leasehold.hpp> includes private dependencies' headers:"$'\n'"$reached"

step "starting a private redis-server"
# Ready means answering as *our* process: a port taken by another server
# makes ours exit, and that other server must not be mistaken for it.
ours() { redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$redis_pid"; }
for attempt in 1 2 3 4 5; do
  port=$(( 20000 + RANDOM % 40000 ))
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --logfile "$work/redis.log" &
  redis_pid=$!
  for _ in $(seq 50); do
    ours && break
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  ours && break
  kill -9 "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
  [ "$attempt" = 5 ] && { cat "$work/redis.log" >&2 || true; fail "redis-server did not start"; }
done
url="redis://127.0.0.1:$port"

apps=("$work/package/app" "$subdirectory/app" "$fetchcontent/app" "$work/app-pkgconfig"
      "$work/package/guest_app" "$subdirectory/guest_app" "$fetchcontent/guest_app"
      "$work/app-src-hpp" "$work/guest-src-hpp")
[ "$prometheus" = ON ] && apps+=("$work/package/prometheus_app" "$subdirectory/prometheus_app" "$fetchcontent/prometheus_app")
for app in "${apps[@]}"; do
  step "running ${app#"$work"/} against $url"
  timeout 60 "$app" "$url" || fail "${app#"$work"/} exited with $?"
done

step "running getting_started against $url: it leads, then stops on SIGTERM"
log=$work/getting_started.out
"$work/getting_started/getting_started" "$url" >"$log" 2>&1 &
app_pid=$!
# Polls for up to $1 tenths of a second until the command after it succeeds.
within() {
  local tenths=$1
  shift
  for _ in $(seq "$tenths"); do "$@" && return 0; sleep 0.1; done
  "$@"
}
# A new group's first election waits one ttl (5 s): the empty-restart guard.
within 200 grep -q '^report ' "$log" || { cat "$log"; fail "getting_started did not lead within 20 s"; }
grep -q '^leading "reports" (fencing token [0-9]*)$' "$log" || { cat "$log"; fail "getting_started led without saying so"; }
kill -TERM "$app_pid"
# stop() takes at most drain_timeout + stop_timeout (5 s + 2 s); it should take a round trip.
exited() { ! kill -0 "$app_pid" 2>/dev/null; }
within 80 exited || { cat "$log"; fail "getting_started still running 8 s after SIGTERM"; }
rc=0
wait "$app_pid" || rc=$?
app_pid=""
if [ "$rc" != 0 ] || ! grep -qx stopped "$log"; then
  cat "$log"
  fail "getting_started: exit $rc after SIGTERM, expected 0 and 'stopped'"
fi

if grep -q '^LEASEHOLD_BUILD_TOOLS:BOOL=ON' "$build/CMakeCache.txt"; then
  step "running the installed CLI"
  [ -x "$prefix/bin/leasehold" ] || fail "missing after install: bin/leasehold"
  "$prefix/bin/leasehold" --help >/dev/null || fail "leasehold --help"
  rc=0
  "$prefix/bin/leasehold" --url "$url" status consumer || rc=$?
  # The consumers released their lease on stop: the group exists (its
  # fencing counter) but nobody holds it.
  [ "$rc" = 1 ] || fail "leasehold status: exit $rc, expected 1 (not held)"
else
  step "skipping the CLI: $build was configured with LEASEHOLD_BUILD_TOOLS=OFF"
fi

step "passed"
