"""The binding's checks of tensors against the sizes it passes on: the library sees pointers
and sizes only, so a tensor smaller than they say would be read or written past its end.
Shapes are checked before devices, so this runs on CPU tensors; an argument set whose shapes
all agree ends at the device check, which shows no shape check refuses it. Prints
"skipped: why" and passes where PyTorch is missing.

  python3 tests/python/binding_checks_test.py --library build/src/libfajit.so
"""
import argparse
import sys

import cuda_torch

torch = cuda_torch.require(cuda=False)
import fajit  # noqa: E402

failures = []
NOT_ON_A_DEVICE = "must be on one CUDA device"


def expect_error(name, call, fragment):
    try:
        call()
    except ValueError as error:
        if fragment in str(error):
            print(f"ok     {name}: {error}")
            return
        print(f"FAILED {name}: {str(error)!r} does not say {fragment!r}")
    else:
        print(f"FAILED {name}: no error")
    failures.append(name)


def tensor(*shape, dtype=torch.bfloat16):
    return torch.zeros(shape, dtype=dtype)


def offsets(*values):
    return torch.tensor(values, dtype=torch.int32)


def dense_cases(runtime):
    q, k, v = tensor(2, 8, 16, 64), tensor(2, 2, 32, 64), tensor(2, 2, 32, 64)
    expect_error("dense, shapes that agree", lambda: runtime.attention(q, k, v), NOT_ON_A_DEVICE)
    expect_error("dense, out of one batch for two", lambda: runtime.attention(q, k, v, out=tensor(1, 8, 16, 64)),
                 "out has shape (1, 8, 16, 64): expected (2, 8, 16, 64)")
    expect_error("dense, k of one batch for two", lambda: runtime.attention(q, tensor(1, 2, 32, 64), v),
                 "k has shape (1, 2, 32, 64): expected (2, 2, 32, 64)")
    expect_error("dense, v shorter than k", lambda: runtime.attention(q, k, tensor(2, 2, 16, 64)),
                 "v has shape (2, 2, 16, 64): expected (2, 2, 32, 64)")
    expect_error("dense, k of another head dim", lambda: runtime.attention(q, tensor(2, 2, 32, 32), v),
                 "k has shape (2, 2, 32, 32): expected (2, 2, 32, 64)")


def varlen_cases(runtime):
    q, k, v = tensor(20, 8, 64), tensor(50, 2, 64), tensor(50, 2, 64)
    cu_q, cu_k = offsets(0, 5, 20), offsets(0, 10, 50)

    def call(k=k, v=v, cu_k=cu_k, out=None):
        return runtime.attention_varlen(q, k, v, cu_q, cu_k, 15, 40, out=out)

    expect_error("varlen, shapes that agree", call, NOT_ON_A_DEVICE)
    expect_error("varlen, v of fewer rows than k", lambda: call(v=tensor(40, 2, 64)),
                 "v has shape (40, 2, 64): expected (50, 2, 64)")
    expect_error("varlen, k with a strided head dimension", lambda: call(k=tensor(50, 2, 128)[..., ::2]),
                 "k must be [total_k, heads_kv, head_dim] with a contiguous head dimension")
    expect_error("varlen, cu_seqlens_k of another batch", lambda: call(cu_k=offsets(0, 10, 20, 50)),
                 "cu_seqlens_k has shape (4,): expected (3,)")
    expect_error("varlen, out of another head dim", lambda: call(out=tensor(20, 8, 32)),
                 "out has shape (20, 8, 32): expected (20, 8, 64)")
    expect_error("varlen, cu_seqlens_q of one offset",
                 lambda: runtime.attention_varlen(q, k, v, offsets(0), cu_k, 15, 40),
                 "cu_seqlens_q has shape (1,): expected (2,)")


def paged_cases(runtime):
    q, cache = tensor(8, 8, 64), tensor(10, 16, 2, 64)
    cu_q, table, lens = offsets(0, 5, 8), offsets(7, 2, 9, 0, 4, 1).view(2, 3), offsets(40, 17)

    def call(v_cache=cache, table=table, lens=lens):
        return runtime.attention_paged(q, cache, v_cache, cu_q, table, lens, 5)

    expect_error("paged, shapes that agree", call, NOT_ON_A_DEVICE)
    expect_error("paged, a block table of one sequence for two", lambda: call(table=table[:1]),
                 "block_table has shape (1, 3): expected (2, 3)")
    expect_error("paged, kv_lens of three sequences for two", lambda: call(lens=offsets(40, 17, 3)),
                 "kv_lens has shape (3,): expected (2,)")
    expect_error("paged, a v cache of fewer pages", lambda: call(v_cache=tensor(5, 16, 2, 64)),
                 "v_cache has shape (5, 16, 2, 64): expected (10, 16, 2, 64)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", default=fajit.default_library_path())
    runtime = fajit.Runtime(parser.parse_args().library)
    dense_cases(runtime)
    varlen_cases(runtime)
    paged_cases(runtime)
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
