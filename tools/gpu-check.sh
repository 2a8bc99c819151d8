#!/usr/bin/env bash
# One command for a machine with a GPU: builds fa-jit from this checkout with the host's own
# toolchain, runs every ctest suite, then the PyTorch harness at the seed shapes (B=1, Hq=32,
# Hkv=8, Lq=2048, D=128, causal bottom-right, Lk 2048/8192/16384, f16 and bf16), and prints
# a summary with counts. Exits 1 when anything failed.
#
#   tools/gpu-check.sh [log directory, default build/gpu-check]
#
# Needs cmake, make or ninja, a C++20 compiler, a GPU toolkit (CUDA or ROCm), python3 with
# PyTorch, and spdlog, fmt and doctest headers. Headers the machine lacks (xxHash, CLI11,
# nlohmann json) come from the ignored .deps folder, which tools/carry-headers.sh fills on
# a machine that has them; carry it with the tree. The build goes to $FAJIT_GPU_BUILD
# (default build-gpu-check); the logs and the harness's JSON reports to the log directory.
set -uo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
logs="$(mkdir -p "${1:-$checkout/build/gpu-check}" && cd "${1:-$checkout/build/gpu-check}" && pwd)"
build="${FAJIT_GPU_BUILD:-$checkout/build-gpu-check}"
cd "$checkout"

generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
prefix=(); [[ -d .deps ]] && prefix=("-DCMAKE_PREFIX_PATH=$checkout/.deps")
summary=()
failures=0
fail() { summary+=("FAILED $1"); failures=$((failures + 1)); }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/device: /'

built=0
if ! cmake -S . -B "$build" "${generator[@]}" "${prefix[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log"
    fail "configure (see $logs/configure.log)"
elif ! cmake --build "$build" -j"$(nproc)" >"$logs/build.log" 2>&1; then
    grep -E "error" -A5 "$logs/build.log" | head -n 60
    fail "build (see $logs/build.log)"
else
    built=1
    summary+=("ok     build ($(grep -o 'fa-jit backends: .*' "$logs/configure.log"))")
fi

if [[ $built -eq 1 ]]; then
    # Every suite, as tools/test.sh runs them: the GPU suites run here instead of skipping.
    (cd "$build" && ctest -V -j"$(nproc)" >"$logs/ctest.log" 2>&1)
    ctest_status=$?
    grep -E '^ *[0-9]+/[0-9]+ Test +#' "$logs/ctest.log"
    # "100% tests passed out of 20", or "95% tests passed, 1 tests failed out of 20".
    counts="$(sed -nE 's/.*tests passed(, ([0-9]+) tests? failed)? out of ([0-9]+).*/\2 \3/p' "$logs/ctest.log" | tail -n 1)"
    skips="$(grep -cE '^[0-9]+: skipped' "$logs/ctest.log")"
    failed_suites="$(sed -n '/The following tests FAILED/,$p' "$logs/ctest.log" | awk '$2 == "-" {print $3}' | paste -sd, -)"
    if [[ -n "$counts" ]]; then
        read -r failed total <<<"$counts"
        [[ -n "$total" ]] || { total=$failed; failed=0; }
        counts="$((total - failed)) passed, $failed failed of $total suites${failed_suites:+ (failed: $failed_suites)}"
        counts+="; $skips skip lines"
    fi
    if [[ $ctest_status -eq 0 && -n "$counts" ]]; then
        summary+=("ok     ctest: $counts")
    else
        fail "ctest: ${counts:-no result} (exit $ctest_status; see $logs/ctest.log)"
    fi

    harness_failed=0
    rm -f "$logs"/sdpa-*.json
    for dtype in f16 bf16; do
        # --strict: a fallback at the seed shape counts as a failure.
        if ! FAJIT_CACHE_DIR="$build/kernel-cache" python3 tools/python/compare_sdpa.py \
                --library "$build/src/libfajit.so" --batch 1 --heads-q 32 --heads-kv 8 --len-q 2048 \
                --head-dim 128 --len-k 2048 8192 16384 --dtype "$dtype" --causal bottom-right --strict \
                --output "$logs/sdpa-$dtype.json" >"$logs/sdpa-$dtype.log" 2>&1; then
            tail -n 20 "$logs/sdpa-$dtype.log"
            fail "harness $dtype did not finish (see $logs/sdpa-$dtype.log)"
            harness_failed=1
        fi
    done
    reports=("$logs"/sdpa-*.json)
    if [[ -e "${reports[0]}" ]]; then
        python3 tools/python/sdpa_summary.py "${reports[@]}" | tee "$logs/sdpa-summary.txt"
        [[ ${PIPESTATUS[0]} -eq 0 ]] || harness_failed=1
        verdict="$(tail -n 1 "$logs/sdpa-summary.txt")"
        if [[ $harness_failed -eq 0 ]]; then summary+=("ok     $verdict"); else fail "$verdict"; fi
    fi
fi

echo "---- gpu-check summary ----"
printf '%s\n' "${summary[@]}"
echo "logs: $logs"
[[ $failures -eq 0 ]]
