#!/usr/bin/env bash
# Builds leasehold against hiredis 1.2.0 instead of Debian's 0.14 and runs the
# unit tests and the client's integration tests, so that the HIREDIS_MAJOR
# branches in include/leasehold/impl/protocol/codec.ipp stay compiled and tested.
#
# Debian 12 packages no hiredis 1.x; its 1.2.0 sources ship inside the npm
# package redis-fast-driver@2.2.6 (deps/hiredis), which this fetches once with
# `npm pack` (npm checks the registry's integrity hash) into
# build/hiredis-1.2.0/, builds with hiredis's own Makefile into a prefix there
# and links leasehold's tests against it (CMake's build rpath; checked with ldd).
#
#   scripts/hiredis1.sh
#
# Environment: LEASEHOLD_HIREDIS1_BUILD_DIR (default build/hiredis1),
# LEASEHOLD_JOBS (default 2), LEASEHOLD_DEBUG_INFO (full or lines, default
# full; see cmake/LeaseholdDebugInfo.cmake), LEASEHOLD_PHASE (build: stop after
# the build; test: only run the tests of an existing build; default: both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LEASEHOLD_HIREDIS1_BUILD_DIR:-$root/build/hiredis1}
jobs=${LEASEHOLD_JOBS:-2}
package=redis-fast-driver-2.2.6
work=$root/build/hiredis-1.2.0
prefix=$work/prefix
phase=${LEASEHOLD_PHASE:-all}

run_tests() {
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 300 -L unit
  # The client end to end, and hostile or malformed replies through it.
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 300 \
    -R '^(Client|BadInput|HarnessScriptedServer)'
}
if [ "$phase" = test ]; then
  run_tests
  exit 0
fi

"$root/scripts/deps.sh"
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "hiredis1: installing npm"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm
fi

mkdir -p "$work"
if [ ! -f "$work/$package.tgz" ]; then
  (cd "$work" && npm pack --silent "${package%-*}@${package##*-}" >/dev/null)
fi

# Unpacked afresh each run: the Makefile writes hiredis.pc beside the sources
# with this prefix baked in, and would not rewrite a stale one.
rm -rf "$work/src" "$prefix"
mkdir -p "$work/src"
tar -xzf "$work/$package.tgz" -C "$work/src" --strip-components=3 package/deps/hiredis
version=$(awk '/#define HIREDIS_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $3} END {print v}' \
  "$work/src/hiredis.h")
if [ "$version" != "1.2.0" ]; then
  echo "hiredis1: $package carries hiredis $version, not 1.2.0" >&2
  exit 1
fi
# LIBRARY_PATH is also a compiler variable that the Makefile would pick up
# from the environment: set it on the command line so lib/ is always used.
make -C "$work/src" -j "$jobs" PREFIX="$prefix" LIBRARY_PATH=lib USE_SSL=0 install >"$work/make.log" 2>&1 ||
  { tail -n 30 "$work/make.log"; exit 1; }

# The cached pkg_check_modules result of an earlier configure would win over
# PKG_CONFIG_PATH: drop it.
rm -f "$build/CMakeCache.txt"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEHOLD_WERROR=ON -DLEASEHOLD_DEBUG_INFO=${LEASEHOLD_DEBUG_INFO:-full} \
  -DLEASEHOLD_BUILD_EXAMPLES=OFF -DLEASEHOLD_BUILD_BENCH=OFF -DLEASEHOLD_BUILD_TOOLS=OFF \
  -DLEASEHOLD_INSTALL=OFF >/dev/null
configured=$(sed -n 's/^HIREDIS_VERSION:INTERNAL=//p' "$build/CMakeCache.txt")
if [ "$configured" != "1.2.0" ]; then
  echo "hiredis1: CMake found hiredis '$configured', not 1.2.0" >&2
  exit 1
fi
cmake --build "$build" -j "$jobs" --target leasehold_unit_tests leasehold_integration_tests

# Each binary must load the 1.2.0 library from the prefix, not Debian's 0.14.
for bin in "$build/tests/leasehold_unit_tests" "$build/tests/leasehold_integration_tests"; do
  loaded=$(ldd "$bin" | awk '/libhiredis/ {print $3}')
  echo "hiredis1: $(basename "$bin") loads ${loaded:-no libhiredis}"
  case "$loaded" in
    "$prefix"/lib/libhiredis.so.*) ;;
    *) echo "hiredis1: expected $prefix/lib/libhiredis.so.*" >&2; exit 1 ;;
  esac
done
echo "hiredis1: hiredis $version ($(readlink -f "$prefix/lib/libhiredis.so"))"

[ "$phase" = build ] || run_tests
