#!/usr/bin/env python3
"""The same fa-jit calls on two or more runtimes in one process: a build step against the one before.

    python3 tools/python/ab_runtimes.py --library build/src/libfajit.so --shapes short \\
        --variant before:FAJIT_TEMPLATE_DIR=/path/to/the/old/kernel_templates

Runtime "base" has no settings of its own; each --variant NAME:KEY=VALUE[,KEY=VALUE...] is one
more runtime with those FAJIT_* settings: FAJIT_TEMPLATE_DIR times other kernel templates
(a step's templates against the last commit's, exported with `git archive`),
FAJIT_TENSOR_MAPS=0 the cp.async copies against TMA, and library=PATH another build of the
library, for a change to the host code. Every runtime runs the same inputs, in
rounds that alternate between the runtimes (CUDA events over back-to-back calls), so clock
and temperature drift fall on all of them alike. Each row prints every round's ms, the
TFLOP/s of each runtime's best round, and the largest difference of each variant's output
from base's (0 where only the speed should change).

Shape sets (--shapes, one or more): seed (B=1, Hq=32, Hkv=8, Lq=2048, D=128, bottom-right,
Lk 2K/8K/16K, bf16 and f16); hopper (non-causal and top-left at 8K-16K, D 64/128/256, head
dims padded to a swizzle block, and a tiny call whose host work shows); short (the 16K-token
calls at L 1K-4K of tools/python/sweep_sdpa.py, where the tile order and a tile's first and
last steps matter most); e4m3 (FP8 inputs with a bf16 output); value-dims (V head dims of
their own, d/dv: MLA's 192/128 and the wide-Q rows that take 64-key steps on wgmma-sm90; run
them against FAJIT_FAMILY=mma-sm80 to see what the Hopper tiles buy). --softcap C gives every
call a logit soft-cap, so tiles can be compared on the capped softmax
(--variant t12:FAJIT_TILE=bq=192,bk=64,waves=12).
"""
import argparse
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402
from bench_features import bench  # noqa: E402
from compare_sdpa import visible_pairs  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}
SHAPES = {  # dtype, batch, heads_q, heads_kv, d, len_q, len_k, causal[, dv where V's head dim differs]
    "seed": [(dtype, 1, 32, 8, 128, 2048, len_k, "bottom-right")
             for dtype in ("bf16", "f16") for len_k in (2048, 8192, 16384)],
    "hopper": [("f16", 1, 32, 8, 128, 8192, 8192, "none"), ("f16", 1, 16, 16, 64, 16384, 16384, "none"),
               ("f16", 1, 16, 16, 256, 16384, 16384, "none"), ("f16", 1, 32, 8, 128, 16384, 16384, "top-left"),
               ("bf16", 1, 32, 8, 80, 2048, 8192, "bottom-right"), ("f16", 1, 32, 8, 96, 2048, 8192, "bottom-right"),
               ("bf16", 1, 32, 8, 128, 128, 256, "bottom-right")],
    "short": [("f16", 8, 16, 16, 128, 2048, 2048, "none"), ("f16", 8, 32, 32, 64, 2048, 2048, "none"),
              ("f16", 4, 32, 32, 64, 4096, 4096, "none"), ("f16", 8, 8, 8, 256, 2048, 2048, "none"),
              ("f16", 8, 16, 16, 128, 2048, 2048, "top-left"), ("f16", 4, 16, 16, 128, 4096, 4096, "top-left"),
              ("f16", 8, 32, 32, 64, 2048, 2048, "top-left"), ("bf16", 16, 16, 16, 128, 1024, 1024, "top-left")],
    "e4m3": [("e4m3", 1, 16, 16, 128, 16384, 16384, "none"), ("e4m3", 1, 16, 16, 128, 16384, 16384, "top-left"),
             ("e4m3", 1, 32, 8, 128, 2048, 16384, "bottom-right")],
    "value-dims": [("bf16", 1, 32, 8, 192, 2048, 8192, "bottom-right", 128),
                   ("bf16", 1, 16, 16, 192, 8192, 8192, "none", 128),
                   ("bf16", 1, 32, 8, 200, 2048, 8192, "bottom-right", 128),
                   ("bf16", 1, 16, 16, 256, 8192, 8192, "none", 128),
                   ("f16", 1, 32, 8, 128, 2048, 8192, "bottom-right", 256)],
}


def parse_variant(text):
    """NAME:KEY=VALUE[,KEY=VALUE...] as (name, settings). A KEY is a FAJIT_* setting, or
    library, the path of another build of libfajit.so: loaded beside base's in the same
    process, it times a change to the host code (a tile plan, a stage count), which
    FAJIT_TEMPLATE_DIR cannot. A value may hold commas (FAJIT_TILE=bq=64,waves=4): only a
    comma before FAJIT_ or library= starts the next setting."""
    name, _, assignments = text.partition(":")
    settings = dict(item.split("=", 1) for item in re.split(r",(?=FAJIT_|library=)", assignments) if item)
    if not name or not settings or not all(key.startswith("FAJIT_") or key == "library" for key in settings):
        raise argparse.ArgumentTypeError(
            f"--variant {text!r}: expected NAME:KEY=VALUE[,KEY=VALUE...], each KEY FAJIT_* or library")
    return name, settings


def variant_runtimes(library, variants, **common):
    """Runtime "base" on library with the common settings, and one runtime a variant, on the
    build it names (its library setting) or on base's."""
    runtimes = {"base": fajit.Runtime(library, **common)}
    for name, settings in variants:
        settings = dict(settings)
        runtimes[name] = fajit.Runtime(settings.pop("library", library), **{**common, **settings})
    return runtimes


def inputs(dtype, batch, heads_q, heads_kv, d, dv, len_q, len_k):
    """q, k, v drawn in f32 and converted (FP8 saturates nothing: randn stays far below 448)."""
    def draw(heads, length, width):
        return torch.randn(batch, heads, length, width, device="cuda").to(DTYPES[dtype])
    return draw(heads_q, len_q, d), draw(heads_kv, len_k, d), draw(heads_kv, len_k, dv)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--variant", type=parse_variant, action="append", default=[],
                        help="NAME:KEY=VALUE[,...]: one more runtime beside base (repeatable); KEY FAJIT_* or library")
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=["seed", "hopper"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--softcap", type=float, default=0.0, help="c of c tanh(s / c) on every call (0: none)")
    args = parser.parse_args()
    if not args.variant:
        parser.error("give at least one --variant to compare with base")
    runtimes = variant_runtimes(args.library, args.variant, FAJIT_LOG_LEVEL="warn")
    for shape in (shape for name in args.shapes for shape in SHAPES[name]):
        dtype, batch, heads_q, heads_kv, d, len_q, len_k, causal, *value_dim = shape
        dv = value_dim[0] if value_dim else d
        q, k, v = inputs(dtype, batch, heads_q, heads_kv, d, dv, len_q, len_k)
        outs = {name: fajit.output_like(q, v) for name in runtimes}
        calls = {name: (lambda rt=rt, o=outs[name]: rt.attention(q, k, v, causal=causal, out=o, softcap=args.softcap))
                 for name, rt in runtimes.items()}
        for call in calls.values():
            call()
        torch.cuda.synchronize()
        differences = "  ".join(f"max |{name} - base| {(outs[name].float() - outs['base'].float()).abs().max().item():.3g}"
                                for name in runtimes if name != "base")
        times = {name: [] for name in runtimes}
        for _ in range(args.rounds):
            for name, call in calls.items():
                times[name].append(bench(call, args.reps))
        flops = 2 * batch * heads_q * (d + dv) * visible_pairs(len_q, len_k, causal)
        cells = "  ".join(f"{name} {' / '.join(f'{t:.4f}' for t in ts)} ms ({flops / min(ts) / 1e9:.1f})"
                          for name, ts in times.items())
        family = runtimes["base"].selected_variant(q, k, v, causal=causal, softcap=args.softcap).split(",")[0]
        dims = f"{d}" if dv == d else f"{d}/{dv}"
        print(f"{dtype:>4} B={batch:<2} H={heads_q}/{heads_kv} d={dims:<7} {len_q}x{len_k:<6} {causal:<12} {cells}  "
              f"{differences}  [{family}]", flush=True)


if __name__ == "__main__":
    main()
