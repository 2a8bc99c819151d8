"""fa-jit as PyTorch custom operators: torch.ops.fajit.attention, .attention_varlen, .attention_paged.

Registered through torch.library, so the calls trace under torch.compile (each op has a fake
implementation that gives the output's shape) and can be captured in a CUDA graph. For graph
capture, make one call before capturing (it compiles the kernel and allocates the split-KV
workspace) and create the runtime with FAJIT_CHECK_INDICES=0 (the index check reads the block
table back to the host) and FAJIT_DECODE_SPLITS=N (the split count then never depends on the
call's lengths). A captured paged call stays right as kv_lens grows, up to max_seqlen_k.

  import fajit_torch
  fajit_torch.use(fajit.Runtime(FAJIT_CHECK_INDICES=0, FAJIT_DECODE_SPLITS=8))
  out = torch.ops.fajit.attention(q, k, v, "bottom-right", None)
"""
import os
import sys
import threading
from typing import Optional

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit  # noqa: E402

_runtime = None
_runtime_lock = threading.Lock()


def use(runtime):
    """Makes `runtime` (a fajit.Runtime) the one the operators call."""
    global _runtime
    with _runtime_lock:
        _runtime = runtime


def runtime():
    """The operators' runtime: the one given to use(), else one made from the FAJIT_* environment."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = fajit.Runtime()
        return _runtime


def _window(window_left, window_right):
    """FlashAttention's window_size convention: (-1, -1) is no window."""
    return None if window_left == -1 and window_right == -1 else (window_left, window_right)


@torch.library.custom_op("fajit::attention", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: str, scale: Optional[float],
              window_left: int = -1, window_right: int = -1, softcap: float = 0.0,
              sinks: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q, k [.., d]; v [.., dv] (dv may differ from d); returns out like q with v's head dim dv.

    window_left/right: keys before/after each row's diagonal key, -1 unbounded (both -1: no
    window); softcap: c of c tanh(s / c), 0 for none; sinks: float32 [heads_q] or None."""
    return runtime().attention(q, k, v, causal=causal, scale=scale, window=_window(window_left, window_right),
                               softcap=softcap, sinks=sinks)


@attention.register_fake
def _(q, k, v, causal, scale, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return fajit.output_like(q, v)


@torch.library.custom_op("fajit::attention_varlen", mutates_args=())
def attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                     cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: str,
                     scale: Optional[float], window_left: int = -1, window_right: int = -1, softcap: float = 0.0,
                     sinks: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q [total_q, heads_q, d]; k, v [total_k, heads_kv, d]; int32 cumulative offsets; out like q.

    The model features as for fajit::attention."""
    return runtime().attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                      causal=causal, scale=scale, window=_window(window_left, window_right),
                                      softcap=softcap, sinks=sinks)


@attention_varlen.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, window_left=-1,
      window_right=-1, softcap=0.0, sinks=None):
    return fajit.output_like(q, v)


@torch.library.custom_op("fajit::attention_paged", mutates_args=())
def attention_paged(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cu_seqlens_q: torch.Tensor,
                    block_table: torch.Tensor, kv_lens: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int,
                    causal: str, scale: Optional[float], window_left: int = -1, window_right: int = -1,
                    softcap: float = 0.0, sinks: Optional[torch.Tensor] = None) -> torch.Tensor:
    """q [total_q, heads_q, d]; caches [pages, page_size, heads_kv, d]; out like q.

    max_seqlen_k bounds every kv_lens entry; 0 means the block table's capacity. The model
    features as for fajit::attention."""
    return runtime().attention_paged(q, k_cache, v_cache, cu_seqlens_q, block_table, kv_lens, max_seqlen_q,
                                     causal=causal, scale=scale, max_seqlen_k=max_seqlen_k or None,
                                     window=_window(window_left, window_right), softcap=softcap, sinks=sinks)


@attention_paged.register_fake
def _(q, k_cache, v_cache, cu_seqlens_q, block_table, kv_lens, max_seqlen_q, max_seqlen_k, causal, scale,
      window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return fajit.output_like(q, v_cache)
