#!/usr/bin/env python3
"""fa-jit's batched forms beside PyTorch, on the same inputs, in one run.

  ragged  sequences of different lengths, q and k/v packed (attention_varlen), against
          PyTorch's SDPA on the padded dense batch (each sequence padded on the left to the
          longest, so bottom-right causal lines up; PyTorch gets its best dense case)
  paged   decode or short chunks against a paged cache (attention_paged), against fa-jit on
          the same K/V dense and contiguous, and PyTorch's SDPA on the dense K/V
Every fa-jit result is checked per sequence against SDPA's math path in f32. Each timing is
the median of CUDA-event-timed calls after warm-up; paged mode times each call alone (host
work included) and, as engines run decode, replayed in a CUDA graph over several input sets,
in --rounds rounds that alternate between fa-jit's layouts and PyTorch's backends (medians).
A device-to-device copy of 4 GiB is timed in the same run as the bandwidth roofline;
bandwidth counts the K and V bytes read once, at the graph-replay time.

  python3 tools/python/compare_batched.py --library build/src/libfajit.so ragged --seqs 8
  python3 tools/python/compare_batched.py paged --batch 16 --len-k 8192 --page-size 16 --rounds 5
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
TORCH_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                  "efficient": SDPBackend.EFFICIENT_ATTENTION}


def time_ms(call, warmup=5, repeats=30):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_ms(calls, repeats=20, warmup_s=0.2):
    """Per-call time of `calls` replayed as one CUDA graph, the way engines run decode: the
    calls (one per input set, so the inputs are not all in L2, like a model's layers) warm
    up on the capturing stream first, which gives fa-jit's split workspace to that stream.
    That stream first waits for the current one, where the inputs were written: without the
    wait, the warm-up calls could read inputs still being written."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:
            call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for call in calls:
            call()
    # Replays for a while before timing: after a heavier shape, the first replays of the
    # next one ran up to 14% slower and settled within about 100 ms of calls (H200, 128 x
    # 8K paged after 128 x 32K: 1.111 ms, then 0.975 measured again; 0.974 in a fresh
    # process). Every backend gets the same warm-up.
    warm_until = time.perf_counter() + warmup_s
    while time.perf_counter() < warm_until:
        graph.replay()
        torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / len(calls))
    return statistics.median(times)


def copy_bandwidth():
    """Bytes read plus written per second by a 4 GiB device-to-device copy."""
    source = torch.empty(1 << 31, dtype=torch.int16, device="cuda")
    target = torch.empty_like(source)
    ms = time_ms(lambda: target.copy_(source), warmup=2, repeats=10)
    return 2 * source.numel() * 2 / (ms * 1e-3)


def reference(q, k, v, causal):
    """One sequence in f32 through SDPA's math path; q [Lq, Hq, d], k/v [Lk, Hkv, d]."""
    lq, hq, _ = q.shape
    lk, hkv, _ = k.shape
    if lq == 0:
        return q.float()
    if lk == 0:
        return torch.zeros_like(q, dtype=torch.float32)
    group = hq // hkv
    qf = q.float().transpose(0, 1)
    kf = k.float().transpose(0, 1).repeat_interleave(group, 0)
    vf = v.float().transpose(0, 1).repeat_interleave(group, 0)
    mask = None
    if causal == "bottom-right":
        mask = torch.ones(lq, lk, dtype=torch.bool, device=q.device).tril(lk - lq)
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(qf, kf, vf, attn_mask=mask)
    if mask is not None:  # rows that see no key: fa-jit writes zeros
        out = torch.where(mask.any(-1)[None, :, None], out, torch.zeros_like(out))
    return out.transpose(0, 1)


def torch_timings(q, k, v, **mask):
    """Each SDPA backend alone on the same tensors; mask: attn_mask= or is_causal=."""
    results = {}
    for name, backend in TORCH_BACKENDS.items():
        try:
            with sdpa_kernel(backend):
                call = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **mask)
                call()
                results[name] = {"ms": time_ms(call)}
        except RuntimeError as error:
            results[name] = {"unsupported": str(error).splitlines()[0][:160]}
    return results


def torch_graph_ms(backend, graph_sets, **mask):
    """One SDPA backend's graph replay over graph_sets (a list of (q, k, v)); raises
    RuntimeError where the backend cannot run or be captured."""
    with sdpa_kernel(backend):
        return graph_ms([lambda s=s: F.scaled_dot_product_attention(*s, enable_gqa=True, **mask) for s in graph_sets])


def run_ragged(rt, args, dtype):
    rng = random.Random(args.seed)
    lengths = [rng.randint(args.min_len, args.max_len) for _ in range(args.seqs)]
    hq, hkv, d = args.heads_q, args.heads_kv, args.head_dim
    total = sum(lengths)
    q = torch.randn(total, hq, d, dtype=dtype, device="cuda")
    k = torch.randn(total, hkv, d, dtype=dtype, device="cuda")
    v = torch.randn(total, hkv, d, dtype=dtype, device="cuda")
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device="cuda")
    longest = max(lengths)
    out = rt.attention_varlen(q, k, v, cu, cu, longest, longest, causal="bottom-right")
    worst = 0.0
    for b, length in enumerate(lengths):
        s, e = cu[b].item(), cu[b + 1].item()
        worst = max(worst, (out[s:e].float() - reference(q[s:e], k[s:e], v[s:e], "bottom-right")).abs().max().item())
    fajit_ms = time_ms(lambda: rt.attention_varlen(q, k, v, cu, cu, longest, longest, causal="bottom-right", out=out))
    # PyTorch: the padded dense batch, left-padded so each sequence's queries and keys end together.
    dense_q = torch.zeros(args.seqs, hq, longest, d, dtype=dtype, device="cuda")
    dense_k = torch.zeros(args.seqs, hkv, longest, d, dtype=dtype, device="cuda")
    dense_v = torch.zeros_like(dense_k)
    for b, length in enumerate(lengths):
        s, e = cu[b].item(), cu[b + 1].item()
        dense_q[b, :, longest - length:] = q[s:e].transpose(0, 1)
        dense_k[b, :, longest - length:] = k[s:e].transpose(0, 1)
        dense_v[b, :, longest - length:] = v[s:e].transpose(0, 1)
    pairs = sum(l * (l + 1) // 2 for l in lengths)
    flops = 4 * d * hq * pairs
    torch_results = torch_timings(dense_q, dense_k, dense_v, is_causal=True)
    best = min((r["ms"] for r in torch_results.values() if "ms" in r), default=float("nan"))
    return {"mode": "ragged", "lengths": lengths, "fajit_ms": fajit_ms,
            "fajit_tflops": flops / (fajit_ms * 1e9), "max_abs_error": worst,
            "torch_padded_dense": torch_results, "speedup_vs_best_torch": best / fajit_ms,
            "note": "PyTorch ran the left-padded dense batch with is_causal (its dense best case)"}


def paged_inputs(args, dtype, generator):
    """One input set of the paged mode: a paged cache (shuffled pages unless --in-order) and
    the same K/V dense."""
    batch, lk, lq, page = args.batch, args.len_k, args.len_q, args.page_size
    hq, hkv, d = args.heads_q, args.heads_kv, args.head_dim
    pages_per_seq = (lk + page - 1) // page
    num_pages = batch * pages_per_seq
    # Slots before heads (vLLM's layout), or heads before slots (--heads-first).
    shape = (num_pages, hkv, page, d) if args.heads_first else (num_pages, page, hkv, d)
    k_cache = torch.randn(*shape, dtype=dtype, device="cuda")
    v_cache = torch.randn_like(k_cache)
    slots_first = (lambda cache: cache.transpose(1, 2)) if args.heads_first else (lambda cache: cache)
    if args.in_order:
        order = torch.arange(num_pages, device="cuda")
    else:
        order = torch.randperm(num_pages, device="cuda", generator=generator)
    table = order.view(batch, pages_per_seq).to(torch.int32).contiguous()
    q = torch.randn(batch * lq, hq, d, dtype=dtype, device="cuda")
    # The same K/V, dense and contiguous [batch, Hkv, Lk, d].
    gathered = lambda cache: slots_first(cache)[table.long()].reshape(batch, pages_per_seq * page, hkv, d)[:, :lk]
    return {"q": q, "k_cache": k_cache, "v_cache": v_cache, "table": table,
            "k_dense": gathered(k_cache).transpose(1, 2).contiguous(),
            "v_dense": gathered(v_cache).transpose(1, 2).contiguous(),
            "q_dense": q.view(batch, lq, hq, d).transpose(1, 2).contiguous(), "out": torch.empty_like(q)}


def run_paged(rt, args, dtype, roofline):
    batch, lk, lq, page = args.batch, args.len_k, args.len_q, args.page_size
    hkv, d = args.heads_kv, args.head_dim
    kv_bytes = 2 * batch * hkv * lk * d * torch.finfo(dtype).bits // 8
    # Graph replays rotate over input sets totalling about 4 GiB, far past the L2.
    generator = torch.Generator("cuda").manual_seed(args.seed)
    sets = [paged_inputs(args, dtype, generator) for _ in range(max(1, min(8, (4 << 30) // kv_bytes)))]
    first = sets[0]
    q, out = first["q"], first["out"]
    kv_lens = torch.full((batch,), lk, dtype=torch.int32, device="cuda")
    cu_q = torch.arange(0, batch * lq + 1, lq, dtype=torch.int32, device="cuda")
    paged = lambda s: (lambda: rt.attention_paged(s["q"], s["k_cache"], s["v_cache"], cu_q, s["table"], kv_lens, lq,
                                                  causal="bottom-right", out=s["out"], heads_first=args.heads_first))
    dense_outs = [torch.empty_like(s["q_dense"]) for s in sets]
    dense = lambda s, o: (lambda: rt.attention(s["q_dense"], s["k_dense"], s["v_dense"], causal="bottom-right",
                                               out=o))
    paged(first)()
    worst = 0.0
    for b in range(min(batch, 4)):
        want = reference(q[b * lq:(b + 1) * lq], first["k_dense"][b].transpose(0, 1),
                         first["v_dense"][b].transpose(0, 1), "bottom-right")
        worst = max(worst, (out[b * lq:(b + 1) * lq].float() - want).abs().max().item())
    paged_ms = time_ms(paged(first))
    dense_ms = time_ms(dense(first, dense_outs[0]))
    mask = None if lq == 1 else torch.ones(lq, lk, dtype=torch.bool, device="cuda").tril(lk - lq)
    torch_results = torch_timings(first["q_dense"], first["k_dense"], first["v_dense"], attn_mask=mask)
    # Graph replays in rounds that take every runtime in turn, so that the device's clock
    # and temperature drift fall on all of them alike; a figure is the median of its rounds.
    graph_sets = [(s["q_dense"], s["k_dense"], s["v_dense"]) for s in sets]
    rounds = {"fajit_paged": [], "fajit_dense": []}
    for _ in range(args.rounds):
        rounds["fajit_paged"].append(graph_ms([paged(s) for s in sets]))
        rounds["fajit_dense"].append(graph_ms([dense(s, o) for s, o in zip(sets, dense_outs)]))
        for name, backend in TORCH_BACKENDS.items():
            if "ms" not in torch_results[name] or "graph_unsupported" in torch_results[name]:
                continue
            try:
                rounds.setdefault(name, []).append(torch_graph_ms(backend, graph_sets, attn_mask=mask))
            except RuntimeError as error:  # a backend that cannot be captured keeps its time alone
                torch_results[name]["graph_unsupported"] = str(error).splitlines()[0][:160]
    for name, result in torch_results.items():
        if name in rounds and "graph_unsupported" not in result:
            result["graph_ms"] = statistics.median(rounds[name])
            result["graph_rounds_ms"] = rounds[name]
    paged_graph_ms = statistics.median(rounds["fajit_paged"])
    dense_graph_ms = statistics.median(rounds["fajit_dense"])
    best = min((r["ms"] for r in torch_results.values() if "ms" in r), default=float("nan"))
    best_graph = min((r["graph_ms"] for r in torch_results.values() if "graph_ms" in r), default=float("nan"))
    # Per round: the fastest PyTorch graph of that round against each fa-jit layout.
    captured = [name for name, r in torch_results.items() if "graph_ms" in r]
    best_each_round = [min(rounds[name][i] for name in captured) for i in range(args.rounds)] if captured else []
    ahead = {layout: sum(ours <= theirs for ours, theirs in zip(rounds[f"fajit_{layout}"], best_each_round))
             for layout in ("paged", "dense")}
    return {"mode": "paged", "batch": batch, "len_q": lq, "len_k": lk, "page_size": page,
            "heads_first": args.heads_first, "in_order": args.in_order, "input_sets": len(sets),
            "fajit_paged_ms": paged_ms, "fajit_dense_ms": dense_ms, "paged_over_dense": paged_ms / dense_ms,
            "fajit_paged_graph_ms": paged_graph_ms, "fajit_dense_graph_ms": dense_graph_ms,
            "fajit_paged_graph_rounds_ms": rounds["fajit_paged"], "fajit_dense_graph_rounds_ms": rounds["fajit_dense"],
            "fajit_paged_tb_s": kv_bytes / (paged_graph_ms * 1e9), "copy_roofline_tb_s": roofline / 1e12,
            "fraction_of_copy": kv_bytes / (paged_graph_ms * 1e-3) / roofline,
            "dense_fraction_of_copy": kv_bytes / (dense_graph_ms * 1e-3) / roofline, "max_abs_error": worst,
            "torch_dense": torch_results, "speedup_vs_best_torch": best / paged_ms,
            "graph_speedup_vs_best_torch": best_graph / paged_graph_ms,
            "dense_graph_speedup_vs_best_torch": best_graph / dense_graph_ms,
            "rounds": args.rounds, "paged_ahead_rounds": ahead["paged"], "dense_ahead_rounds": ahead["dense"],
            "note": "each call alone (host included) and replayed in a CUDA graph over the input sets, in rounds "
                    "that alternate between the runtimes (medians over rounds); PyTorch ran the same K/V dense and "
                    "contiguous; Lq>1 gives it a materialized bottom-right mask"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=fajit.default_library_path())
    parser.add_argument("--dtype", choices=DTYPES, default="bf16")
    parser.add_argument("--heads-q", type=int, default=32)
    parser.add_argument("--heads-kv", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", help="also write the results as JSON here")
    parser.add_argument("--check-indices", action="store_true",
                        help="time with FAJIT_CHECK_INDICES=1 (each call reads its indices back and waits)")
    modes = parser.add_subparsers(dest="mode", required=True)
    ragged = modes.add_parser("ragged")
    ragged.add_argument("--seqs", type=int, default=8)
    ragged.add_argument("--min-len", type=int, default=100)
    ragged.add_argument("--max-len", type=int, default=4000)
    paged = modes.add_parser("paged")
    paged.add_argument("--batch", type=int, nargs="+", default=[16])
    paged.add_argument("--len-k", type=int, nargs="+", default=[8192])
    paged.add_argument("--len-q", type=int, default=1)
    paged.add_argument("--page-size", type=int, default=16)
    paged.add_argument("--heads-first", action="store_true",
                       help="caches [pages, heads_kv, page_size, d] instead of [pages, page_size, heads_kv, d]")
    paged.add_argument("--in-order", action="store_true",
                       help="each sequence's pages consecutive in the cache instead of shuffled over it")
    paged.add_argument("--rounds", type=int, default=1,
                       help="graph replays of every runtime in this many alternating rounds (medians reported)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    rt = fajit.Runtime(args.library, FAJIT_CHECK_INDICES=int(args.check_indices))
    dtype = DTYPES[args.dtype]
    results = []
    if args.mode == "ragged":
        results.append(run_ragged(rt, args, dtype))
    else:
        roofline = copy_bandwidth()
        for batch in args.batch:
            for lk in args.len_k:
                one = argparse.Namespace(**vars(args))
                one.batch, one.len_k = batch, lk
                results.append(run_paged(rt, one, dtype, roofline))
    for result in results:
        print(json.dumps(result))
    if args.output:
        with open(args.output, "w") as file:
            json.dump(results, file, indent=1)


if __name__ == "__main__":
    main()
