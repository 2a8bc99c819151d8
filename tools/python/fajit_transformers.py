"""fa-jit behind Hugging Face transformers' AttentionInterface, as attn_implementation="fajit".

  import fajit_transformers
  fajit_transformers.register()
  model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="fajit")

The masks are SDPA's (registered under the same name), which transformers leaves out for an
unpadded causal batch, prefill or decode with a KV cache. Such calls run torch.ops.fajit.attention,
causal bottom-right when the layer is causal, so a query block lines up with the end of its keys.
A call that comes with a mask (a padded batch, or a sliding-window layer, whose mask SDPA's
mask function builds) or with dropout runs transformers' own SDPA function instead; `calls`
counts both kinds, so a caller can see which ran. A layer's soft-cap (Gemma 2) and sinks
(gpt-oss) run on fa-jit, which SDPA's function would leave out.
"""
import os
import sys

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fajit_torch  # noqa: E402,F401  (registers torch.ops.fajit)

NAME = "fajit"
calls = {"fajit": 0, "sdpa": 0}


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """query [batch, heads_q, len_q, d], key/value [batch, heads_kv, len_k, d]; returns
    ([batch, len_q, heads_q, d], None) as transformers' attention functions do."""
    if attention_mask is not None or dropout > 0.0:
        calls["sdpa"] += 1
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    calls["fajit"] += 1
    causal = "bottom-right" if getattr(module, "is_causal", True) else "none"
    # The features models hand their attention functions: a sliding window of W keys (Mistral,
    # FlashAttention's (W - 1, W - 1) window), a logit soft-cap (Gemma 2) and sinks (gpt-oss).
    window = kwargs.get("sliding_window")
    left = right = -1 if window is None else window - 1
    sinks = kwargs.get("s_aux")
    if sinks is not None:
        sinks = sinks.to(torch.float32).contiguous()
    out = torch.ops.fajit.attention(query, key, value, causal, scaling, left, right,
                                    float(kwargs.get("softcap") or 0.0), sinks)
    return out.transpose(1, 2).contiguous(), None


def register():
    """Registers attn_implementation="fajit" (and its masks) with transformers."""
    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
