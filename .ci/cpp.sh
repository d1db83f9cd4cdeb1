#!/usr/bin/env bash
# The standalone C++ story, end to end, with no Python involved:
#   1. plain CMake build + ctest (kernel unit tests, and the example on Adult when the
#      shared data sits beside the repository);
#   2. the same with DPCORE_SANITIZE=ON (-fsanitize=address,undefined) + ctest;
#   3. cmake --install into a temporary prefix, then build and run csrc/tests/consumer, a
#      separate project that finds the library with find_package(dpcore);
#   4. the example program on ../shared/data/adult/adult.csv.
# Build trees go under a temporary directory (or $DPCORE_CI_BUILD) and are removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

# Tools: install only what is missing (Debian package names).
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v c++ >/dev/null || need+=(g++)
command -v make >/dev/null || command -v ninja >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]} =="
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq "${need[@]}"
fi
# libasan/libubsan ship with g++ on Debian; a compiler without them fails step 2 loudly.

work=${DPCORE_CI_BUILD:-$(mktemp -d)}
if [ -z "${DPCORE_CI_BUILD:-}" ]; then trap 'rm -rf "$work"' EXIT; fi
jobs=${DPCORE_BUILD_JOBS:-2}
cmake --version | head -1

echo "== 1. standalone build + ctest =="
cmake -S csrc -B "$work/build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/build" --parallel "$jobs"
ctest --test-dir "$work/build" --output-on-failure

echo "== 2. sanitizer build (address, undefined) + ctest =="
cmake -S csrc -B "$work/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPCORE_SANITIZE=ON
cmake --build "$work/build-asan" --parallel "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$work/build-asan" --output-on-failure

echo "== 3. install + find_package(dpcore) consumer =="
cmake --install "$work/build" --prefix "$work/prefix"
test -f "$work/prefix/include/dpcore/marginals.hpp"
cmake -S csrc/tests/consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/consumer" --parallel "$jobs"
"$work/consumer/consumer"

echo "== 4. example on Adult =="
adult="$repo/../shared/data/adult/adult.csv"
if [ ! -f "$adult" ]; then
  echo "CI: $adult not found (the shared data must sit beside the repository)" >&2
  exit 1
fi
"$work/build/synthesize_csv" "$adult" --seed 1 --out "$work/adult-synthetic.csv"
test "$(wc -l < "$work/adult-synthetic.csv")" -eq "$(wc -l < "$adult")"
echo "cpp.sh: all C++ checks passed"
