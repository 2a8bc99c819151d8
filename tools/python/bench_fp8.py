#!/usr/bin/env python3
"""e4m3 (FP8) inputs against bf16 ones, fa-jit beside PyTorch's SDPA backends, in one process.

    python3 tools/python/bench_fp8.py --library build/src/libfajit.so

For each shape, q, k and v are drawn in f32, quantized to float8_e4m3fn with a descale factor
per KV head (amax / 448), and the same quantized values (exactly representable in bf16) are
also given to fa-jit in bf16 and to SDPA's flash and cuDNN backends, so every run computes the
same attention. Each row prints the timings (CUDA events over back-to-back calls, two rounds
alternating), TFLOP/s of the best round, and each output's largest error against an f64
reference on the dequantized inputs, over the first and last 256 query rows of every head.
SDPA gets the layouts it runs natively: no mask for non-causal, is_causal for top-left, and
for bottom-right with Lq != Lk a materialized boolean mask (its only path there).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402
from bench_features import bench  # noqa: E402
from compare_sdpa import visible_pairs  # noqa: E402

SHAPES = [  # d, lq, lk, causal, heads_q, heads_kv
    (128, 16384, 16384, "none", 16, 16), (128, 8192, 8192, "none", 32, 8), (128, 16384, 16384, "top-left", 16, 16),
    (128, 2048, 16384, "bottom-right", 32, 8), (64, 16384, 16384, "none", 16, 16),
]
CHECKED_ROWS = 256


def quantized(shape, heads_kv, group):
    """(e4m3 tensor, its bf16 dequantized copy, per-KV-head descale) for one input."""
    values = torch.randn(shape, device="cuda")
    per_head = values.unflatten(1, (heads_kv, group)).abs().amax(dim=(0, 2, 3, 4)).clamp(min=1e-6) / 448.0
    scale = per_head.repeat_interleave(group)[None, :, None, None]
    fp8 = (values / scale).to(torch.float8_e4m3fn)
    return fp8, (fp8.float() * scale).to(torch.bfloat16), per_head.contiguous()


def reference_rows(q, k, v, scale, causal, rows):
    """f64 attention of the given query rows of every head, KV heads shared by groups."""
    group = q.shape[1] // k.shape[1]
    len_q, len_k = q.shape[2], k.shape[2]
    out = []
    for head in range(q.shape[1]):
        qh = q[0, head, rows].double()
        kh, vh = k[0, head // group].double(), v[0, head // group].double()
        scores = qh @ kh.T * scale
        if causal != "none":
            shift = 0 if causal == "top-left" else len_k - len_q
            keys = torch.arange(len_k, device="cuda")[None, :]
            scores = scores.masked_fill(keys > (rows[:, None] + shift), float("-inf"))
        out.append(torch.softmax(scores, dim=-1) @ vh)
    return torch.stack(out)


def sdpa_call(backend, q, k, v, causal, out_shape):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kind = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    len_q, len_k = q.shape[2], k.shape[2]
    mask = None
    if causal == "bottom-right" and len_q != len_k:
        rows = torch.arange(len_q, device="cuda")[:, None]
        mask = torch.arange(len_k, device="cuda")[None, :] <= rows + (len_k - len_q)
    kv_group = q.shape[1] // k.shape[1]
    k_full, v_full = k.repeat_interleave(kv_group, 1), v.repeat_interleave(kv_group, 1)

    def call():
        with sdpa_kernel(kind):
            return torch.nn.functional.scaled_dot_product_attention(
                q, k_full, v_full, attn_mask=mask, is_causal=causal != "none" and mask is None)
    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    runtime = fajit.Runtime(args.library, FAJIT_LOG_LEVEL="warn")
    for d, len_q, len_k, causal, heads_q, heads_kv in SHAPES:
        group = heads_q // heads_kv
        q8, q16, q_descale = quantized((1, heads_q, len_q, d), heads_kv, group)
        k8, k16, k_descale = quantized((1, heads_kv, len_k, d), heads_kv, 1)
        v8, v16, v_descale = quantized((1, heads_kv, len_k, d), heads_kv, 1)
        scale = d ** -0.5
        descale = (q_descale, k_descale, v_descale)
        out8 = torch.empty(q16.shape, dtype=torch.bfloat16, device="cuda")
        out16 = torch.empty_like(out8)
        calls = {
            "fa-jit e4m3": lambda: runtime.attention(q8, k8, v8, causal=causal, scale=scale, out=out8, descale=descale),
            "fa-jit bf16": lambda: runtime.attention(q16, k16, v16, causal=causal, scale=scale, out=out16),
        }
        for backend in ("flash", "cudnn"):
            try:
                call = sdpa_call(backend, q16, k16, v16, causal, out16.shape)
                call()
                calls[backend] = call
            except RuntimeError as error:
                print(f"  {backend}: unsupported ({str(error).splitlines()[0][:80]})")
        outputs = {label: call() for label, call in calls.items()}
        outputs["fa-jit e4m3"], outputs["fa-jit bf16"] = out8, out16
        torch.cuda.synchronize()
        rows = torch.cat([torch.arange(CHECKED_ROWS), torch.arange(len_q - CHECKED_ROWS, len_q)]).cuda()
        want = reference_rows(q16, k16, v16, scale, causal, rows)
        times = {label: [] for label in calls}
        for _ in range(2):
            for label, call in calls.items():
                times[label].append(bench(call, args.reps))
        flops = 4 * heads_q * d * visible_pairs(len_q, len_k, causal)
        variant = runtime.selected_variant(q8, k8, v8, causal=causal, scale=scale, descale=descale)
        print(f"d={d} {len_q}x{len_k} {causal} heads {heads_q}/{heads_kv}  [{variant.split(',')[0]}]", flush=True)
        for label, ts in times.items():
            error = (outputs[label][0][:, rows].double() - want).abs().max().item()
            print(f"  {label:<12} {' / '.join(f'{t:.4f}' for t in ts)} ms  {flops / min(ts) / 1e9:7.1f} TFLOP/s"
                  f"  max |error| vs f64 {error:.3g}", flush=True)


if __name__ == "__main__":
    main()
