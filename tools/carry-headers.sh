#!/usr/bin/env bash
# Fills the checkout's ignored .deps folder with the header-only dependencies a GPU machine
# may lack (xxHash, CLI11, nlohmann json) and their CMake package files, copied from this
# machine's build environment (tools/build-env.sh). tools/gpu-check.sh and
# tools/tiles/run_on_gpu.sh build with .deps (CMAKE_PREFIX_PATH) when it exists; carry the
# folder along with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
exec tools/build-env.sh bash -c '
  set -euo pipefail
  rm -rf .deps
  mkdir -p .deps/include .deps/share/cmake
  cp -r /usr/include/xxhash.h /usr/include/xxh3.h /usr/include/CLI /usr/include/nlohmann .deps/include/
  # The package files find their headers relative to their own place (prefix/share/cmake/NAME).
  cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json .deps/share/cmake/
  echo "carry-headers: $(du -sh .deps | cut -f1) in .deps"
'
