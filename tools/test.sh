#!/usr/bin/env bash
# Builds fa-jit and runs every test suite. GPU suites skip, saying why, where no
# device exists. Usage: tools/test.sh [build directory, default build]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
exec tools/build-env.sh bash -c "
  set -euo pipefail
  cmake -S . -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build '$build' -j\$(nproc)
  cd '$build'
  status=0
  ctest --output-on-failure -j\$(nproc) --output-log ctest-full.log || status=\$?
  echo '---- doctest summaries ----'
  awk '/ Testing: /{name=\$NF} /^\[doctest\] (test cases|assertions)|^skipped/{printf \"%-22s %s\n\", name, \$0}' ctest-full.log
  exit \$status
"
