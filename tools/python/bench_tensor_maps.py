#!/usr/bin/env python3
"""wgmma-sm90's copies through tensor maps (TMA) against its cp.async copies, in one process.

    python3 tools/python/bench_tensor_maps.py --library build/src/libfajit.so

Two runtimes, FAJIT_TENSOR_MAPS=1 and 0, run the same inputs: the seed shapes (bf16 and f16,
GQA 32/8, D=128, Lq 2048, bottom-right), the non-causal and top-left shapes of the Hopper
issue, head dims that pad to a swizzle block (80, 96), and a tiny call where host work per
call shows. Each row prints both timings (CUDA events over back-to-back calls, two rounds
alternating) and the largest difference between the two outputs, which should be 0: only
the copy changes.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402
from bench_features import bench  # noqa: E402

SHAPES = [  # dtype, d, lq, lk, causal, heads_q, heads_kv
    ("bf16", 128, 2048, 2048, "bottom-right", 32, 8), ("bf16", 128, 2048, 8192, "bottom-right", 32, 8),
    ("bf16", 128, 2048, 16384, "bottom-right", 32, 8), ("f16", 128, 2048, 16384, "bottom-right", 32, 8),
    ("f16", 128, 8192, 8192, "none", 32, 8), ("f16", 64, 16384, 16384, "none", 16, 16),
    ("f16", 256, 16384, 16384, "none", 16, 16), ("f16", 128, 16384, 16384, "top-left", 32, 8),
    ("bf16", 80, 2048, 8192, "bottom-right", 32, 8), ("f16", 96, 2048, 8192, "bottom-right", 32, 8),
    ("bf16", 128, 128, 256, "bottom-right", 32, 8),
]


def visible_pairs(len_q, len_k, causal):
    if causal == "none":
        return len_q * len_k
    if causal == "top-left":
        return sum(min(i + 1, len_k) for i in range(len_q))
    return sum(max(0, min(len_k, len_k - len_q + i + 1)) for i in range(len_q))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    runtimes = {"tma": fajit.Runtime(args.library, FAJIT_TENSOR_MAPS=1, FAJIT_LOG_LEVEL="warn"),
                "cp.async": fajit.Runtime(args.library, FAJIT_TENSOR_MAPS=0, FAJIT_LOG_LEVEL="warn")}
    for name, d, len_q, len_k, causal, heads_q, heads_kv in SHAPES:
        dtype = torch.bfloat16 if name == "bf16" else torch.float16
        q = torch.randn(1, heads_q, len_q, d, dtype=dtype, device="cuda")
        k = torch.randn(1, heads_kv, len_k, d, dtype=dtype, device="cuda")
        v = torch.randn_like(k)
        outs = {label: torch.empty_like(q) for label in runtimes}
        calls = {label: (lambda rt=rt, o=outs[label]: rt.attention(q, k, v, causal=causal, out=o))
                 for label, rt in runtimes.items()}
        for call in calls.values():
            call()
        torch.cuda.synchronize()
        difference = (outs["tma"].float() - outs["cp.async"].float()).abs().max().item()
        times = {label: [] for label in runtimes}
        for _ in range(2):
            for label, call in calls.items():
                times[label].append(bench(call, args.reps))
        flops = 4 * heads_q * d * visible_pairs(len_q, len_k, causal)
        cells = "  ".join(f"{label} {' / '.join(f'{t:.4f}' for t in ts)} ms ({flops / min(ts) / 1e9:.1f} TFLOP/s)"
                          for label, ts in times.items())
        variant = runtimes["tma"].selected_variant(q, k, v, causal=causal)
        print(f"{name:>4} d={d:<3} {len_q}x{len_k:<6} {causal:<12} {cells}  max |tma - cp.async| {difference:.3g}"
              f"  [{variant.split(',')[0]}]", flush=True)


if __name__ == "__main__":
    main()
