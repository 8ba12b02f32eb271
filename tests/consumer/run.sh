#!/usr/bin/env bash
# Proves that leasehold can be installed and consumed the three ways a user
# would: builds and installs it into a fresh temporary prefix, then builds
# tests/consumer/app.cpp
#   1. as a CMake project with find_package(leasehold CONFIG REQUIRED),
#      against that prefix only;
#   2. as a CMake project that add_subdirectory()s the leasehold source tree;
#   3. as one file compiled with `pkg-config --cflags --libs leasehold`;
#   4. header-mostly: the installed headers plus one translation unit of
#      <leasehold/src.hpp>, with a bare compiler command (no CMake, no
#      libleasehold);
# and runs each against a private redis-server on a free loopback port (each
# must lead and stop cleanly), plus the installed `leasehold` CLI. When the
# build has the prometheus component, 1 and 2 also build and run
# prometheus_app.cpp with find_package(leasehold ... COMPONENTS prometheus).
# 1 and 2 also build and run guest/guest_app, a service with its own separately
# compiled Asio and deprecated Asio names; 1 compiles every installed public
# header alone. The installed package must impose no Asio macro, carry no
# test-only switch, and keep hiredis, OpenSSL, fmt and Boost.URL out of
# <leasehold/leasehold.hpp>.
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

cleanup() {
  if [ -n "$redis_pid" ]; then
    kill -9 "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  [ -z "${subdirectory:-}" ] || rm -rf "$subdirectory"
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

step "consumer 1/4: find_package(leasehold CONFIG REQUIRED) (component prometheus: $prometheus)"
# Only the temporary prefix is searched: no package registry, no system copy.
cmake -S "$root/tests/consumer" -B "$work/package" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLEASEHOLD_CONSUMER_MODE=package -DLEASEHOLD_CONSUMER_PROMETHEUS=$prometheus -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >"$work/package.log" \
  || { cat "$work/package.log"; fail "configuring the package consumer"; }
grep -q "leasehold 0*[0-9].* from $libdir/cmake/leasehold" "$work/package.log" \
  || { cat "$work/package.log"; fail "find_package did not take leasehold from the temporary prefix"; }
cmake --build "$work/package" -j "$jobs"

step "consumer 2/4: add_subdirectory(leasehold source tree)"
# With BUILD_DIR given, the library is compiled as there (build type, warning
# and debug-info options) from a directory as deep below the source tree, so
# ccache serves its files instead of compiling them all again.
subdirectory_args=(-DCMAKE_BUILD_TYPE=Release)
subdirectory=$work/subdirectory
if [ -n "${1:-}" ]; then
  cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
  subdirectory_args=(-DCMAKE_BUILD_TYPE="$(cached CMAKE_BUILD_TYPE)" -DLEASEHOLD_WERROR="$(cached LEASEHOLD_WERROR)"
                     -DLEASEHOLD_DEBUG_INFO="$(cached LEASEHOLD_DEBUG_INFO)")
  subdirectory=$root/build/consumer-subdirectory-$$
fi
cmake -S "$root/tests/consumer" -B "$subdirectory" -G Ninja "${subdirectory_args[@]}" \
  -DLEASEHOLD_CONSUMER_MODE=subdirectory -DLEASEHOLD_CONSUMER_PROMETHEUS=$prometheus \
  -DLEASEHOLD_SOURCE_DIR="$root" >/dev/null
subdirectory_targets="app guest_app"
[ "$prometheus" = ON ] && subdirectory_targets="app guest_app prometheus_app"
# shellcheck disable=SC2086
cmake --build "$subdirectory" -j "$jobs" --target $subdirectory_targets

step "consumer 3/4: pkg-config --cflags --libs leasehold"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ "$(pkg-config --variable=prefix leasehold | xargs realpath)" = "$(realpath "$prefix")" ] \
  || fail "leasehold.pc does not point at the prefix it was installed to"
# shellcheck disable=SC2046
${CXX:-c++} -Wall -Wextra -Wpedantic -Werror -O1 "$root/tests/consumer/app.cpp" -o "$work/app-pkgconfig" \
  $(pkg-config --cflags --libs leasehold)

step "consumer 4/4: the installed headers and <leasehold/src.hpp>, one bare compiler command each"
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
bare=(${CXX:-g++} -std=c++20 -Wall -Wextra -Wpedantic -Werror -O1 -I"$prefix/include")
"${bare[@]}" "$root/tests/consumer/app.cpp" "$work/leasehold_src.cpp" -o "$work/app-src-hpp" "${deps[@]}" \
  || fail "building app with <leasehold/src.hpp>"
"${bare[@]}" -DBOOST_ASIO_SEPARATE_COMPILATION "${guest_asio[@]}" "$work/leasehold_src.cpp" -o "$work/guest-src-hpp" "${deps[@]}" \
  || fail "building guest_app (its own Asio TU) with <leasehold/src.hpp>"

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

apps=("$work/package/app" "$subdirectory/app" "$work/app-pkgconfig" "$work/package/guest_app" "$subdirectory/guest_app"
      "$work/app-src-hpp" "$work/guest-src-hpp")
[ "$prometheus" = ON ] && apps+=("$work/package/prometheus_app" "$subdirectory/prometheus_app")
for app in "${apps[@]}"; do
  step "running ${app#"$work"/} against $url"
  timeout 60 "$app" "$url" || fail "${app#"$work"/} exited with $?"
done

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
