#!/usr/bin/env python3
"""Decode calls on two or more runtimes in one process, as CUDA graph replays: a build step
against the one before, where the step is a few microseconds a call.

    python3 tools/python/ab_decode.py --library build/src/libfajit.so \\
        --variant l2-merge:FAJIT_CLUSTER_MERGE=0 --shapes 1x8192 1x32768 16x8192

Runtime "base" has no settings of its own; each --variant NAME:KEY=VALUE[,KEY=VALUE...] is one
more runtime with those FAJIT_* settings (FAJIT_TEMPLATE_DIR: other kernel templates; library=PATH:
another build of the library, for a change to the host code, e.g. a stage count). Each
shape (BATCHxKEYS: bf16, GQA 32/8 unless --heads-q/--heads-kv say otherwise, D=128 unless
--head-dim, one query row unless --len-q, shuffled 16-key pages, or the same K/V dense and
contiguous with --dense) is replayed as compare_batched.py's graphs do, in rounds that
alternate between the runtimes, so clock and temperature drift fall on all of them alike.
Each row prints every round's ms per call and the largest difference of each variant's
output from base's (0 where only the speed should change).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402
from ab_runtimes import parse_variant, variant_runtimes  # noqa: E402
from compare_batched import graph_ms, paged_inputs  # noqa: E402


def parse_shape(text):
    batch, _, keys = text.partition("x")
    if not batch.isdigit() or not keys.isdigit():
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected BATCHxKEYS, e.g. 16x8192")
    return int(batch), int(keys)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--variant", type=parse_variant, action="append", default=[],
                        help="NAME:KEY=VALUE[,...]: one more runtime beside base (repeatable); KEY FAJIT_* or library")
    parser.add_argument("--shapes", type=parse_shape, nargs="+", default=[(1, 8192), (1, 32768), (16, 8192)])
    parser.add_argument("--len-q", type=int, default=1)
    parser.add_argument("--heads-q", type=int, default=32)
    parser.add_argument("--heads-kv", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dense", action="store_true",
                        help="the same K/V dense and contiguous [batch, Hkv, Lk, d] instead of paged")
    args = parser.parse_args()
    if not args.variant:
        parser.error("give at least one --variant to compare with base")
    # Indices unchecked, as under graph capture.
    runtimes = variant_runtimes(args.library, args.variant, FAJIT_LOG_LEVEL="warn", FAJIT_CHECK_INDICES="0")
    for batch, len_k in args.shapes:
        shape = argparse.Namespace(batch=batch, len_k=len_k, len_q=args.len_q, page_size=16, heads_q=args.heads_q,
                                   heads_kv=args.heads_kv, head_dim=args.head_dim, heads_first=False, in_order=False)
        kv_bytes = 2 * batch * args.heads_kv * len_k * args.head_dim * 2
        generator = torch.Generator("cuda").manual_seed(1)
        # Input sets totalling about 4 GiB, far past the L2, as compare_batched.py's.
        sets = [paged_inputs(shape, torch.bfloat16, generator) for _ in range(max(1, min(8, (4 << 30) // kv_bytes)))]
        kv_lens = torch.full((batch,), len_k, dtype=torch.int32, device="cuda")
        cu_q = torch.arange(0, batch + 1, dtype=torch.int32, device="cuda") * args.len_q
        query = "q_dense" if args.dense else "q"
        outs = {name: [torch.empty_like(s[query]) for s in sets] for name in runtimes}

        def call(runtime, s, o):
            if args.dense:
                return lambda: runtime.attention(s["q_dense"], s["k_dense"], s["v_dense"], causal="bottom-right", out=o)
            return lambda: runtime.attention_paged(s["q"], s["k_cache"], s["v_cache"], cu_q, s["table"], kv_lens,
                                                   args.len_q, causal="bottom-right", out=o)

        def calls(runtime, name):
            return [call(runtime, s, o) for s, o in zip(sets, outs[name])]

        times = {name: [] for name in runtimes}
        for _ in range(args.rounds):
            for name, runtime in runtimes.items():
                times[name].append(graph_ms(calls(runtime, name)))
        differences = "  ".join(
            f"max |{name} - base| {max((a.float() - b.float()).abs().max().item() for a, b in zip(outs[name], outs['base'])):.3g}"
            for name in runtimes if name != "base")
        cells = "  ".join(f"{name} {' / '.join(f'{t:.4f}' for t in ts)}" for name, ts in times.items())
        label = (f"{batch}x{len_k} q{args.len_q} H={args.heads_q}/{args.heads_kv} D={args.head_dim}"
                 f" {'dense' if args.dense else 'paged'}")
        print(f"{label}: {cells} ms  {differences}", flush=True)
        del sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
