#!/usr/bin/env python3
"""compare_sdpa.py over a set of Hopper shapes in one process, with one line per shape.

    python3 tools/python/sweep_sdpa.py --library build/src/libfajit.so --output sweep.json

The shapes:
 - FlashAttention-3's benchmark grid: non-causal and causal top-left at L = 2K, 4K and 16K
   (Lq = Lk), head dims 64, 128 and 256, f16, 16K tokens a call (batch 16384 / L) and
   2048 / D heads for Q, K and V alike;
 - D=128 non-causal at 8K (f16), top-left at 8K (bf16), and batch 16 of L=1024 top-left
   (bf16), with the same head rule;
 - the seed shape (B=1, Hq=32, Hkv=8, Lq=2048, D=128, bottom-right) at Lk 2K and 16K, in
   f16 and bf16.
Every shape is one compare_sdpa report (f64 reference, rotated input copies, CUDA-event
medians), fa-jit beside SDPA's flash, cuDNN and efficient backends; the math backend is
left out (never the fastest, and the slowest by far at 16K). Each line gives fa-jit's
TFLOP/s, cuDNN's, the best PyTorch backend's, fa-jit over cuDNN, and fa-jit's max abs error.
Exits 1 when fa-jit failed or fell back on any shape (FAJIT_STRICT).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_sdpa  # noqa: E402
import fajit  # noqa: E402
from sdpa_summary import best_torch  # noqa: E402


def shapes():
    """(label, compare_sdpa arguments) for every shape of the sweep."""
    def square(length, dim, causal, dtype, batch=None):
        heads = 2048 // dim
        return (f"{causal:>12} D={dim:<3} L={length:<5} {dtype:>4} B={batch or 16384 // length:<2} H={heads}",
                ["--batch", str(batch or 16384 // length), "--heads-q", str(heads), "--heads-kv", str(heads),
                 "--len-q", str(length), "--len-k", str(length), "--head-dim", str(dim), "--dtype", dtype,
                 "--causal", causal])

    grid = [square(length, dim, causal, "f16")
            for causal in ("none", "top-left") for dim in (64, 128, 256) for length in (2048, 4096, 16384)]
    extra = [square(8192, 128, "none", "f16"), square(8192, 128, "top-left", "bf16"),
             square(1024, 128, "top-left", "bf16", batch=16)]
    seed = [(f"bottom-right D=128 seed Lk={length:<5} {dtype:>4} B=1  H=32/8",
             ["--len-k", str(length), "--dtype", dtype, "--causal", "bottom-right"])
            for dtype in ("f16", "bf16") for length in (2048, 16384)]
    return grid + extra + seed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--output", default=None, help="write the reports so far, as one JSON list, here")
    options = parser.parse_args()
    runtime = fajit.Runtime(options.library, FAJIT_STRICT="1")
    reports, failed = [], 0
    print(f"{'shape':<44} {'fa-jit':>7} {'cuDNN':>7} {'best PyTorch':>19} {'/cuDNN':>7} {'error':>8}", flush=True)
    for label, arguments in shapes():
        args = compare_sdpa.parse_arguments(
            ["--library", options.library, "--strict", "--backends", "fajit", "flash", "cudnn", "efficient",
             *arguments])
        report = compare_sdpa.run_report(runtime, args)
        reports.append(report)
        if options.output:  # after every shape, so a run cut short keeps what it measured
            with open(options.output, "w") as file:
                json.dump(reports, file, indent=2)
        for result in report["results"]:
            backends = result["backends"]
            ours, cudnn = backends["fajit"], backends.get("torch_cudnn", {})
            best = best_torch(backends)
            if ours["status"] != "ok":
                failed += 1
                print(f"{label:<44} FAILED {ours['status']}: {ours.get('reason', '')}", flush=True)
                continue
            cudnn_tflops = cudnn["tflops"] if cudnn.get("status") == "ok" else None
            best_text = f"{best[0]} {best[1]:.1f}" if best else "-"
            cudnn_text = f"{cudnn_tflops:.1f}" if cudnn_tflops else "-"
            ratio_text = f"{ours['tflops'] / cudnn_tflops:.2f}x" if cudnn_tflops else "-"
            print(f"{label:<44} {ours['tflops']:7.1f} {cudnn_text:>7} {best_text:>19} {ratio_text:>7} "
                  f"{ours['max_abs_error']:8.2e}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
