#!/usr/bin/env python3
"""What the model features cost: each timed against the same call without it, in one process.

    python3 tools/python/bench_features.py --library build/src/libfajit.so --output features.json

Sliding window: a 2,048-row prefill chunk and a decode batch at the end of 32K keys with a
4,096-key window, against plain causal calls at 4K keys. The chunk's rows see 4,096 keys each
under the window and 2,049..4,096 without it, so the windowed call has 4/3 the work; both
figures are printed. The chunk is also timed against a causal call of equal work, Lq = Lk =
4096 (8.39M visible pairs a head in both). Soft-cap and sinks: the seed shape (bf16, GQA
32/8, D=128, Lq 2048, Lk 8192, bottom-right), D=256 (Gemma 2's head dim) and decode, each
with and without the feature, and the seed shape in f16. Every timing is CUDA events over
back-to-back calls, each row measured twice (rounds), since run-to-run spread is real.
--template-dir-a/-b time two template trees against each other on every row (an A/B of a
kernel change).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402


def bench(call, reps):
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def visible_pairs(len_q, len_k, window_left=None):
    """(query row, key) pairs a bottom-right causal call with an optional left window computes."""
    total = 0
    for i in range(len_q):
        end = len_k - len_q + i + 1
        begin = 0 if window_left is None else max(0, end - 1 - window_left)
        total += max(0, end - begin)
    return total


def tensors(batch, len_q, len_k, head_dim, dtype, heads_q=32, heads_kv=8):
    q = torch.randn(batch, heads_q, len_q, head_dim, dtype=dtype, device="cuda")
    k = torch.randn(batch, heads_kv, len_k, head_dim, dtype=dtype, device="cuda")
    return q, k, torch.randn_like(k)


def cases():
    """(group, label, tensors, call keywords, pairs per head) rows; a group's first row is its baseline."""
    bf16 = torch.bfloat16
    rows = []
    window = (4095, 0)
    for batch, len_q in ((1, 2048), (16, 1)):
        shape = "chunk 2048" if len_q > 1 else "decode 16x1"
        plain = tensors(batch, len_q, 4096, 128, bf16)
        windowed = tensors(batch, len_q, 32768, 128, bf16)
        rows.append((f"window {shape}", "causal, Lk 4096", plain, {}, batch * visible_pairs(len_q, 4096)))
        rows.append((f"window {shape}", "window 4096, Lk 32768", windowed, {"window": window},
                     batch * visible_pairs(len_q, 32768, window[0])))
        if len_q > 1:
            rows.append(("window, equal work", "causal, Lq = Lk = 4096", tensors(1, 4096, 4096, 128, bf16), {},
                         visible_pairs(4096, 4096)))
            rows.append(("window, equal work", "window 4096, Lk 32768", windowed, {"window": window},
                         visible_pairs(len_q, 32768, window[0])))
    sinks = torch.linspace(-2.0, 4.0, 32, device="cuda", dtype=torch.float32)
    # bf16, whose capped rows keep a fixed frame, and the seed shape in f16, whose capped rows keep a
    # moving one (fa_capped_frame_fits in the prelude).
    for label, batch, len_q, len_k, head_dim, dtype in (
            ("seed D=128", 1, 2048, 8192, 128, bf16), ("seed D=128 f16", 1, 2048, 8192, 128, torch.float16),
            ("D=256", 1, 2048, 8192, 256, bf16), ("decode 16x8K", 16, 1, 8192, 128, bf16)):
        t = tensors(batch, len_q, len_k, head_dim, dtype)
        pairs = batch * visible_pairs(len_q, len_k)
        rows.append((label, "plain", t, {}, pairs))
        rows.append((label, "softcap 50", t, {"softcap": 50.0}, pairs))
        rows.append((label, "sinks", t, {"sinks": sinks}, pairs))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--template-dir-a", help="A/B: time every row with these templates ...")
    parser.add_argument("--template-dir-b", help="... against these")
    parser.add_argument("--output", help="write the rows as JSON")
    args = parser.parse_args()

    runtime = fajit.Runtime(args.library, FAJIT_LOG_LEVEL="warn")
    results = []
    rows = cases()
    for group, label, (q, k, v), keywords, pairs in rows:
        out = torch.empty_like(q)
        call = lambda: runtime.attention(q, k, v, causal="bottom-right", out=out, **keywords)  # noqa: E731
        variant = runtime.selected_variant(q, k, v, causal="bottom-right", **keywords)
        times = [bench(call, args.reps) for _ in range(args.rounds)]
        flops = 4 * q.shape[1] * q.shape[3] * pairs
        results.append({"group": group, "label": label, "ms": times, "tflops": flops / (min(times) * 1e9),
                        "variant": variant})

    print(f"{'group':<16} {'call':<24} {'ms (rounds)':<22} {'TFLOP/s':>8} {'x baseline':>10}")
    baseline = {}
    for row in results:
        base = baseline.setdefault(row["group"], min(row["ms"]))
        row["ratio"] = min(row["ms"]) / base
        rounds = " / ".join(f"{t:.4f}" for t in row["ms"])
        print(f"{row['group']:<16} {row['label']:<24} {rounds:<22} {row['tflops']:>8.1f} {row['ratio']:>10.3f}")
    for row in results:
        print(f"  {row['group']}, {row['label']}: {row['variant']}")

    if args.template_dir_a and args.template_dir_b:
        print("A/B (ms, rounds alternate A and B):")
        for group, label, (q, k, v), keywords, pairs in rows:
            out = torch.empty_like(q)
            line = f"  {group:<16} {label:<18}"
            for _ in range(args.rounds):
                for name, directory in (("A", args.template_dir_a), ("B", args.template_dir_b)):
                    rt = fajit.Runtime(args.library, FAJIT_LOG_LEVEL="warn", FAJIT_TEMPLATE_DIR=directory)
                    ms = bench(lambda: rt.attention(q, k, v, causal="bottom-right", out=out, **keywords), args.reps)
                    line += f" {name} {ms:.4f}"
            print(line, flush=True)
    if args.output:
        with open(args.output, "w") as file:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": results}, file,
                      indent=2)


if __name__ == "__main__":
    main()
