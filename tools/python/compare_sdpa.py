#!/usr/bin/env python3
"""fa-jit beside PyTorch's scaled_dot_product_attention, on the same inputs, in one run.

Every performance claim about fa-jit comes from this harness. For each key length it
 - draws inputs, and enough further copies of them to rotate through more memory than the L2
   cache holds, so no timed call finds its inputs cached by the one before;
 - computes a reference with SDPA's math path in f64 (or f32), with the mask materialized and
   key/value heads expanded, so the reference depends on no fused kernel;
 - runs fa-jit (through its C ABI) and each SDPA backend (flash, cuDNN, efficient, math, each
   alone under torch.nn.attention.sdpa_kernel), checks the max abs error of each against the
   reference, and times each with CUDA events: warm-up calls, then the median of many calls;
 - reports a backend that refuses the problem as unsupported, with its reason.
TFLOP/s counts only the FLOPs the mask leaves: 2 * (D + Dv) * B * Hq * (visible query-key pairs),
4 * D * B * Hq * pairs when V's head dim Dv is D; for causal bottom-right with Lk >= Lq the pairs are
Lq*(Lk-Lq) + Lq*(Lq+1)/2.

Example (the seed shape):
  python3 tools/python/compare_sdpa.py --library build/src/libfajit.so \\
      --batch 1 --heads-q 32 --heads-kv 8 --len-q 2048 --head-dim 128 --len-k 2048 8192 16384 \\
      --dtype f16 --causal bottom-right --output results.json
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
TORCH_BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}
# How causal_lower_right reaches each backend (torch/nn/attention/bias.py): only flash and
# efficient have the mask built in; the others get it materialized as a boolean tensor.
CAUSAL_LOWER_RIGHT_PATHS = {
    "flash": "built-in lower-right causal",
    "efficient": "built-in lower-right mask type",
    "cudnn": "materialized boolean mask",
    "math": "materialized boolean mask",
}


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path(),
                        help="path of libfajit.so (default: $FAJIT_LIBRARY, else build/src/libfajit.so)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads-q", type=int, default=32)
    parser.add_argument("--heads-kv", type=int, default=8)
    parser.add_argument("--len-q", type=int, default=2048)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--head-dim-v", type=int, default=None,
                        help="V's and the output's head dim where it differs (DeepSeek-V3 prefill: 192 / 128)")
    parser.add_argument("--len-k", type=int, nargs="+", default=[2048, 8192, 16384])
    parser.add_argument("--dtype", choices=list(DTYPES), default="f16")
    parser.add_argument("--causal", choices=list(fajit.CAUSAL_MODES), default="bottom-right")
    parser.add_argument("--family", default=None, help="FAJIT_FAMILY for fa-jit: auto or a family name (fa-jit warm --help lists them)")
    parser.add_argument("--strict", action="store_true",
                        help="FAJIT_STRICT=1: fail rather than let fa-jit fall back")
    parser.add_argument("--backends", nargs="+", default=["fajit", *TORCH_BACKENDS],
                        choices=["fajit", *TORCH_BACKENDS])
    parser.add_argument("--reference", choices=["f64", "f32"], default="f64")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--rotate-mib", type=int, default=512,
                        help="rotate through input copies totalling at least this much (H200 L2: 50 MiB)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None, help="write the JSON here as well as to stdout")
    return parser.parse_args(argv)


def visible_pairs(len_q, len_k, causal):
    """Query-key pairs the mask leaves, summed over query rows."""
    if causal == "none":
        return len_q * len_k
    offset = len_k - len_q if causal == "bottom-right" else 0
    return sum(min(max(offset + i + 1, 0), len_k) for i in range(len_q))


def causal_mask(len_q, len_k, causal, device):
    """Boolean mask, True where a query attends a key; None without masking."""
    if causal == "none":
        return None
    offset = len_k - len_q if causal == "bottom-right" else 0
    return torch.ones(len_q, len_k, dtype=torch.bool, device=device).tril(diagonal=offset)


def reference(q, k, v, causal, scale, dtype):
    """SDPA's math path in dtype, one query head at a time to bound the score matrix's memory."""
    group = q.shape[1] // k.shape[1]
    mask = causal_mask(q.shape[2], k.shape[2], causal, q.device)
    out = torch.empty(q.shape[:-1] + v.shape[-1:], dtype=dtype, device=q.device)
    with sdpa_kernel(SDPBackend.MATH):
        for h in range(q.shape[1]):
            kv = h // group
            out[:, h:h + 1] = F.scaled_dot_product_attention(
                q[:, h:h + 1].to(dtype), k[:, kv:kv + 1].to(dtype), v[:, kv:kv + 1].to(dtype),
                attn_mask=mask, scale=scale)
    return out


def time_calls(call, copies, warmup, reps):
    """Median and minimum milliseconds of one call, by CUDA events, rotating input copies."""
    for i in range(warmup):
        call(i % copies)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        call(i % copies)
        ends[i].record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) for start, end in zip(starts, ends)]
    return statistics.median(times), min(times)


def first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def measure(call, copies, want, flops, args):
    """Runs call once for its error against want, then times it; unsupported on an exception."""
    try:
        start = time.perf_counter()
        got = call(0)
        torch.cuda.synchronize()
        first_call_s = time.perf_counter() - start
        error = (got.to(want.dtype) - want).abs().max().item()
        median_ms, min_ms = time_calls(call, copies, args.warmup, args.reps)
    except (RuntimeError, ValueError, fajit.FajitError) as failure:
        torch.cuda.synchronize()
        return {"status": "unsupported", "reason": first_line(failure)}
    return {
        "status": "ok",
        "max_abs_error": error,
        "first_call_s": first_call_s,
        "median_ms": median_ms,
        "min_ms": min_ms,
        "tflops": flops / (median_ms * 1e-3) / 1e12,
    }


def torch_call(backend, inputs, args, len_k, scale, expand_kv):
    """One SDPA call on input copy i under a single backend."""
    group = args.heads_q // args.heads_kv
    if args.causal == "bottom-right" and args.len_q != len_k:
        mask, is_causal = causal_lower_right(args.len_q, len_k), False
    else:
        mask, is_causal = None, args.causal != "none"  # top-left, or bottom-right with Lq == Lk

    def call(i):
        q, k, v = inputs[i]
        if expand_kv:
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        with sdpa_kernel(TORCH_BACKENDS[backend]):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale,
                                                  enable_gqa=not expand_kv and group > 1)

    return call


def run_len_k(runtime, args, len_k):
    dtype = DTYPES[args.dtype]
    device = torch.device("cuda")
    scale = 1.0 / math.sqrt(args.head_dim)
    generator = torch.Generator(device=device).manual_seed(args.seed + len_k)

    value_dim = args.head_dim_v or args.head_dim

    def draw(heads, length, dim):
        return torch.randn(args.batch, heads, length, dim, device=device, dtype=torch.float32,
                           generator=generator).to(dtype)

    element = torch.tensor([], dtype=dtype).element_size()
    copy_bytes = element * args.batch * (args.heads_q * args.len_q + args.heads_kv * len_k) * (args.head_dim + value_dim)
    copies = min(32, max(2, math.ceil(args.rotate_mib * 2**20 / copy_bytes)))
    inputs = [(draw(args.heads_q, args.len_q, args.head_dim), draw(args.heads_kv, len_k, args.head_dim),
               draw(args.heads_kv, len_k, value_dim)) for _ in range(copies)]
    outputs = [fajit.output_like(q, v) for q, _, v in inputs]
    q0, k0, v0 = inputs[0]
    want = reference(q0, k0, v0, args.causal, scale, torch.float64 if args.reference == "f64" else torch.float32)
    # Q K^T and P V: 2 FLOPs per multiply-add over d and over dv for each visible pair.
    flops = 2 * (args.head_dim + value_dim) * args.batch * args.heads_q * visible_pairs(args.len_q, len_k, args.causal)

    result = {"len_k": len_k, "flops": flops, "input_copies": copies, "backends": {}}
    if "fajit" in args.backends:
        def fajit_call(i):
            q, k, v = inputs[i]
            return runtime.attention(q, k, v, causal=args.causal, scale=scale, out=outputs[i])

        measured = measure(fajit_call, copies, want, flops, args)
        if measured["status"] == "ok":
            measured["variant"] = runtime.selected_variant(q0, k0, v0, causal=args.causal, scale=scale)
        result["backends"]["fajit"] = measured
    for backend in (b for b in args.backends if b in TORCH_BACKENDS):
        measured = measure(torch_call(backend, inputs, args, len_k, scale, False), copies, want, flops, args)
        if measured["status"] != "ok" and args.heads_q != args.heads_kv:
            # Some backends refuse grouped heads; engines then expand them, which the timing includes.
            expanded = measure(torch_call(backend, inputs, args, len_k, scale, True), copies, want, flops, args)
            if expanded["status"] == "ok":
                expanded["note"] = "key/value heads expanded per call (native GQA refused: " + measured["reason"] + ")"
                measured = expanded
        if args.causal == "bottom-right" and args.len_q != len_k:
            measured["causal_path"] = CAUSAL_LOWER_RIGHT_PATHS[backend]
        result["backends"][f"torch_{backend}"] = measured
    del inputs, outputs, want
    torch.cuda.empty_cache()
    return result


def fajit_settings(args):
    """The FAJIT_* settings the arguments ask of fa-jit's runtime."""
    settings = {}
    if args.family:
        settings["FAJIT_FAMILY"] = args.family
    if args.strict:
        settings["FAJIT_STRICT"] = "1"
    return settings


def run_report(runtime, args):
    """The report of one shape (every --len-k) on `runtime` (None when fa-jit is not run)."""
    if args.heads_q % args.heads_kv != 0:
        sys.exit("--heads-q must be a multiple of --heads-kv")
    return {
        "shape": {"batch": args.batch, "heads_q": args.heads_q, "heads_kv": args.heads_kv, "len_q": args.len_q,
                  "head_dim": args.head_dim, "head_dim_v": args.head_dim_v or args.head_dim},
        "dtype": args.dtype,
        "causal": args.causal,
        "fajit_settings": fajit_settings(args),
        "fajit_version": runtime.version if runtime else None,
        "reference": args.reference,
        "warmup": args.warmup,
        "reps": args.reps,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "results": [run_len_k(runtime, args, len_k) for len_k in args.len_k],
    }


def main():
    args = parse_arguments()
    runtime = fajit.Runtime(args.library, **fajit_settings(args)) if "fajit" in args.backends else None
    text = json.dumps(run_report(runtime, args), indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as file:
            file.write(text + "\n")


if __name__ == "__main__":
    main()
