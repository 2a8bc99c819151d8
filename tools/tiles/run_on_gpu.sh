#!/usr/bin/env bash
# Builds the suites of the NVIDIA tensor-core families (mma-sm80, wgmma-sm90) from this
# checkout on a machine with an NVIDIA GPU, then runs the tile benchmark and the GPU
# tests and prints a compact summary.
#
#   tools/tiles/run_on_gpu.sh [bench|test|all] [family] [head dims for the benchmark...]
#
# Needs cmake, ninja (or make), a C++20 compiler and the CUDA toolkit. Headers the
# machine lacks (xxHash, CLI11, nlohmann json) may sit in an ignored .deps folder with
# their CMake configs (tools/carry-headers.sh fills it); it is used when present. Full logs go to $FAJIT_GPU_LOGS (default:
# the build dir).
set -uo pipefail
checkout="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FAJIT_GPU_BUILD:-$checkout/build-gpu}"
logs="${FAJIT_GPU_LOGS:-$build}"
what="${1:-all}"
[[ $# -gt 0 ]] && shift
mkdir -p "$build" "$logs"

generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
prefix=(); [[ -d "$checkout/.deps" ]] && prefix=("-DCMAKE_PREFIX_PATH=$checkout/.deps")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null
if ! cmake -S "$checkout" -B "$build" "${generator[@]}" "${prefix[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DFAJIT_BACKEND_HIP=OFF >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log"; exit 1
fi
if ! cmake --build "$build" -j"$(nproc)" --target test_mma_gpu mma_tile_bench >"$logs/build.log" 2>&1; then
    grep -E "error" -A5 "$logs/build.log" | head -n 60; exit 1
fi
echo "built in $SECONDS s"

status=0
if [[ "$what" == bench || "$what" == all ]]; then
    timeout 200 "$build/tests/mma/mma_tile_bench" "$@" 2>&1 | tee "$logs/bench.log" || status=1
    echo "bench done at $SECONDS s"
fi
if [[ "$what" == test || "$what" == all ]]; then
    timeout 300 "$build/tests/mma/test_mma_gpu" >"$logs/gpu_test.log" 2>&1; code=$?
    grep -E "ERROR|sweep|ramp|test cases|assertions|skipped" "$logs/gpu_test.log" | head -n 60
    [[ $code -eq 0 ]] || status=1
    echo "tests done at $SECONDS s (exit $code)"
fi
exit $status
