#!/usr/bin/env bash
# The main job: build fa-jit, warm a kernel cache for the reference targets (gfx1151,
# the RDNA3.5 APU of the chunked-prefill workload, and sm_90a), list what was built,
# and where a GPU and PyTorch exist, run attention beside PyTorch's SDPA.
# Usage: tools/main-job.sh [build directory, default build]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
export FAJIT_CACHE_DIR="${FAJIT_CACHE_DIR:-$PWD/$build/kernel-cache}"
exec tools/build-env.sh bash -c "
  set -euo pipefail
  cmake -S . -B '$build' -DCMAKE_BUILD_TYPE=Release -DFAJIT_BUILD_TESTS=OFF > /dev/null
  cmake --build '$build' -j\$(nproc) --target fa-jit fajit
  cli='$build/tools/cli/fa-jit'
  \"\$cli\" devices
  # Warm only the targets whose compiler this machine has; devices says which is missing.
  archs=()
  \"\$cli\" devices | grep -q 'hip compiler' || archs+=(gfx1151)
  \"\$cli\" devices | grep -q 'cuda compiler' || archs+=(sm_90a)
  [ \${#archs[@]} -gt 0 ] || { echo 'main-job: no kernel compiler available'; exit 2; }
  # Prefill, and decode over a paged cache of 16-key pages, as an engine serves it.
  \"\$cli\" warm --preset llama-3 --decode --page-size 16 \$(printf -- '--arch %s ' \"\${archs[@]}\")
  \"\$cli\" ls
  if \"\$cli\" devices | grep -q '^cuda:' && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    python3 tools/python/compare_sdpa.py --library '$build/src/libfajit.so' --batch 1 --heads-q 32 --heads-kv 8 \
      --len-q 2048 --head-dim 128 --len-k 2048 8192 16384 --dtype f16 --causal bottom-right
  else
    echo 'main-job: no GPU with PyTorch here; attention was not run'
  fi
"
