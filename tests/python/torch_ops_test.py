"""torch.ops.fajit against fa-jit's direct calls and SDPA: eager, under torch.compile, and
captured in a CUDA graph that is replayed as a paged cache grows. Prints "skipped: why" and
passes where PyTorch or a CUDA device is missing.

  python3 tests/python/torch_ops_test.py --library build/src/libfajit.so
"""
import argparse
import sys

import cuda_torch

torch = cuda_torch.require()
import torch.nn.functional as F  # noqa: E402

import fajit  # noqa: E402
import fajit_torch  # noqa: E402

failures = []


def check(name, got, want, tolerance=2e-2):
    error = (got.float() - want.float()).abs().max().item()
    status = "ok" if error <= tolerance else "FAILED"
    print(f"{status:6} {name}: max abs error {error:.3g}")
    if error > tolerance:
        failures.append(name)


def dense_case():
    q = torch.randn(2, 8, 64, 128, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(2, 2, 200, 128, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    mask = torch.ones(64, 200, dtype=torch.bool, device="cuda").tril(200 - 64)
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, enable_gqa=True)
    check("attention, eager", torch.ops.fajit.attention(q, k, v, "bottom-right", None), want)
    compiled = torch.compile(lambda q, k, v: torch.ops.fajit.attention(q, k, v, "bottom-right", None) * 2.0,
                             fullgraph=True)
    check("attention, torch.compile", compiled(q, k, v) / 2.0, want)


def features_case():
    """A sliding window, a soft-cap and sinks through the operator, against the same math in f32."""
    q = torch.randn(1, 8, 96, 64, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(1, 2, 300, 64, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    sinks = torch.linspace(-1.0, 3.0, 8, device="cuda")
    left, cap, scale = 40, 20.0, 0.5
    rows = torch.arange(96, device="cuda")[:, None] + 300 - 96  # each row's diagonal key
    keys = torch.arange(300, device="cuda")[None, :]
    visible = (keys <= rows) & (keys >= rows - left)
    scores = torch.einsum("bhqd,bhkd->bhqk", q.float(), k.float().repeat_interleave(4, dim=1)) * scale
    scores = (cap * torch.tanh(scores / cap)).masked_fill(~visible, float("-inf"))
    with_sink = torch.cat([scores, sinks.view(1, 8, 1, 1).expand(1, 8, 96, 1)], dim=-1).softmax(-1)[..., :300]
    want = with_sink @ v.float().repeat_interleave(4, dim=1)
    got = torch.ops.fajit.attention(q, k, v, "bottom-right", scale, left, 0, cap, sinks)
    check("attention with window, soft-cap and sinks", got, want)


def value_head_dim_case():
    """DeepSeek's MLA prefill shape: q, k of head dim 192, v and out of 128, against SDPA in f32."""
    q = torch.randn(1, 8, 200, 192, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(1, 2, 500, 192, dtype=torch.bfloat16, device="cuda")
    v = torch.randn(1, 2, 500, 128, dtype=torch.bfloat16, device="cuda")
    mask = torch.ones(200, 500, dtype=torch.bool, device="cuda").tril(500 - 200)
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, enable_gqa=True)
    got = torch.ops.fajit.attention(q, k, v, "bottom-right", None)
    if got.shape != want.shape:
        failures.append("dv output shape")
        print(f"FAILED dv output shape {tuple(got.shape)}, want {tuple(want.shape)}")
        return
    check("attention with dv 128 != d 192", got, want)
    compiled = torch.compile(lambda q, k, v: torch.ops.fajit.attention(q, k, v, "bottom-right", None), fullgraph=True)
    check("attention with dv != d, torch.compile", compiled(q, k, v), want)


def varlen_features_case():
    """The varlen operator with a window and a soft-cap, against the dense operator per sequence."""
    lengths = [37, 300, 128]
    q = torch.randn(sum(lengths), 8, 64, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(sum(lengths), 2, 64, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    cu = torch.tensor([0, 37, 337, 465], dtype=torch.int32, device="cuda")
    got = torch.ops.fajit.attention_varlen(q, k, v, cu, cu, 300, 300, "bottom-right", None, 50, 0, 30.0, None)
    for b, (start, end) in enumerate(zip(cu[:-1].tolist(), cu[1:].tolist())):
        per_sequence = lambda t: t[start:end].transpose(0, 1).unsqueeze(0)
        want = torch.ops.fajit.attention(per_sequence(q), per_sequence(k), per_sequence(v), "bottom-right", None,
                                         50, 0, 30.0, None)
        check(f"varlen with window and soft-cap, sequence {b}", per_sequence(got), want, tolerance=1e-2)


def paged_graph_case():
    """Decode over a paged cache, captured once and replayed as every sequence grows."""
    batch, heads_q, heads_kv, d, page = 4, 16, 4, 128, 16
    pages_per_seq = 64
    k_cache = torch.randn(batch * pages_per_seq, page, heads_kv, d, dtype=torch.bfloat16, device="cuda")
    v_cache = torch.randn_like(k_cache)
    table = torch.randperm(batch * pages_per_seq, device="cuda").to(torch.int32).view(batch, pages_per_seq)
    kv_lens = torch.tensor([1, 100, 333, 700], dtype=torch.int32, device="cuda")
    cu_q = torch.arange(batch + 1, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, heads_q, d, dtype=torch.bfloat16, device="cuda")
    capacity = pages_per_seq * page
    call = lambda: torch.ops.fajit.attention_paged(q, k_cache, v_cache, cu_q, table, kv_lens, 1, capacity,
                                                   "bottom-right", None)
    # One call on the capturing stream first: it compiles the kernel and allocates the
    # stream's split-KV workspace, which a stream under capture may not do. The stream
    # waits for the inputs, written on the current one.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        captured = call()
    for step, grow in enumerate((0, 17, 300)):
        kv_lens += grow
        q.copy_(torch.randn_like(q))
        graph.replay()
        torch.cuda.synchronize()
        for b in range(batch):
            length = kv_lens[b].item()
            rows = table[b].long()
            k = k_cache[rows].reshape(-1, heads_kv, d)[:length].transpose(0, 1).float()
            v = v_cache[rows].reshape(-1, heads_kv, d)[:length].transpose(0, 1).float()
            query = q[b].unsqueeze(0).unsqueeze(2).float()  # [1, heads_q, 1, d]
            want = F.scaled_dot_product_attention(query, k.unsqueeze(0), v.unsqueeze(0), enable_gqa=True)
            check(f"paged decode, graph replay {step}, sequence {b} (kv_len {length})",
                  captured[b].unsqueeze(0).unsqueeze(2), want)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", default=fajit.default_library_path())
    args = parser.parse_args()
    torch.manual_seed(0)
    # Graph capture: no index read-back, and a split count that no call's lengths change.
    fajit_torch.use(fajit.Runtime(args.library, FAJIT_CHECK_INDICES=0, FAJIT_DECODE_SPLITS=4))
    dense_case()
    features_case()
    value_head_dim_case()
    varlen_features_case()
    paged_graph_case()
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
