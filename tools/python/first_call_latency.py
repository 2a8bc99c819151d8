#!/usr/bin/env python3
"""First-call latency of fa-jit through its C ABI: what an engine's first request waits for.

Three figures, each from a fresh process except the last:
  - cold:   an empty cache directory, so the first call compiles its variant;
  - disk:   a new process over the cache the cold run filled, so the first call loads the
            code object from disk (the median of --repeats such processes);
  - memory: the second call of a process, served from the runtime's in-memory map.
Each process creates its runtime and tensors first (CUDA context included), then times one
attention call with the host clock, synchronizing the device before and after.

Example:
  python3 tools/python/first_call_latency.py --library build/src/libfajit.so --output latency.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=None, help="path of libfajit.so (default: $FAJIT_LIBRARY, else build/src/libfajit.so)")
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--dtype", choices=["f16", "bf16"], default="bf16")
    parser.add_argument("--len", type=int, default=2048, help="query and key length")
    parser.add_argument("--repeats", type=int, default=5, help="new processes timed over the warm disk cache")
    parser.add_argument("--output", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # cache directory, inside a timed process
    return parser.parse_args()


def timed_process(args):
    """Runs inside a fresh process: one runtime, two calls; prints their times as JSON."""
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fajit

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    started = time.perf_counter()
    runtime = fajit.Runtime(args.library, FAJIT_CACHE_DIR=args.child)
    created_ms = (time.perf_counter() - started) * 1e3
    q = torch.randn(1, 32, args.len, args.head_dim, device="cuda", dtype=dtype)
    k = torch.randn(1, 8, args.len, args.head_dim, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    calls = []
    for _ in range(2):
        torch.cuda.synchronize()
        started = time.perf_counter()
        runtime.attention(q, k, v, causal="bottom-right", out=out)
        torch.cuda.synchronize()
        calls.append((time.perf_counter() - started) * 1e3)
    # The kernel's own time, to subtract: the first call's excess over it is what the JIT costs.
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(10):
        runtime.attention(q, k, v, causal="bottom-right", out=out)
    torch.cuda.synchronize()
    kernel_ms = (time.perf_counter() - started) * 1e3 / 10
    print(json.dumps({"runtime_create_ms": created_ms, "first_call_ms": calls[0], "second_call_ms": calls[1],
                      "kernel_ms": kernel_ms, "variant": runtime.selected_variant(q, k, v, causal="bottom-right")}))


def run_child(args, cache_dir):
    command = [sys.executable, os.path.abspath(__file__), "--child", cache_dir, "--head-dim", str(args.head_dim),
               "--dtype", args.dtype, "--len", str(args.len)]
    if args.library:
        command += ["--library", args.library]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"timed process failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    args = parse_arguments()
    if args.child:
        timed_process(args)
        return
    with tempfile.TemporaryDirectory(prefix="fa-jit-latency-") as cache_dir:
        cold = run_child(args, cache_dir)
        disk = [run_child(args, cache_dir) for _ in range(args.repeats)]
    report = {
        "shape": {"batch": 1, "heads_q": 32, "heads_kv": 8, "len": args.len, "head_dim": args.head_dim,
                  "dtype": args.dtype, "causal": "bottom-right"},
        "variant": cold["variant"],
        "kernel_ms": cold["kernel_ms"],
        "cold_first_call_ms": cold["first_call_ms"],
        "disk_first_call_ms": statistics.median(d["first_call_ms"] for d in disk),
        "disk_first_call_ms_all": [d["first_call_ms"] for d in disk],
        "memory_call_ms": statistics.median(d["second_call_ms"] for d in disk),
        "runtime_create_ms": statistics.median(d["runtime_create_ms"] for d in disk),
    }
    report["disk_hit_overhead_ms"] = report["disk_first_call_ms"] - report["kernel_ms"]
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as file:
            file.write(text + "\n")


if __name__ == "__main__":
    main()
