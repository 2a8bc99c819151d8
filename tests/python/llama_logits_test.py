"""A small randomly initialised Llama through fa-jit's AttentionInterface adapter, against
the same weights on transformers' SDPA: prefill logits, and the logits of decode steps with a
KV cache. Prints "skipped: why" and passes where PyTorch, transformers or a CUDA device is
missing.

  python3 tests/python/llama_logits_test.py --library build/src/libfajit.so
"""
import argparse
import copy
import sys

import cuda_torch

torch = cuda_torch.require("transformers")
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

import fajit  # noqa: E402
import fajit_torch  # noqa: E402
import fajit_transformers  # noqa: E402


def build(config, implementation, state=None):
    # A copy each: the model keeps its attention implementation in its config.
    model = LlamaForCausalLM._from_config(copy.deepcopy(config), attn_implementation=implementation)
    if state is not None:
        model.load_state_dict(state)
    return model.to("cuda", torch.bfloat16).eval()


def relative_error(got, want):
    return ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", default=fajit.default_library_path())
    args = parser.parse_args()
    fajit_torch.use(fajit.Runtime(args.library))
    fajit_transformers.register()
    torch.manual_seed(0)
    # GQA 8/2 at head dim 64, 4 layers: small, and on the tensor-core paths (prefill and decode).
    config = LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1024, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=1024)
    reference = build(config, "sdpa")
    model = build(config, fajit_transformers.NAME, reference.state_dict())
    ids = torch.randint(0, config.vocab_size, (2, 300), device="cuda")
    failures = []
    with torch.no_grad():
        errors = {}
        errors["prefill"] = relative_error(model(ids).logits, reference(ids).logits)
        # Decode with a KV cache: prefill 299 tokens, then three steps of one token each.
        mine = model(ids[:, :-3], use_cache=True)
        theirs = reference(ids[:, :-3], use_cache=True)
        for step in range(3):
            token = ids[:, -3 + step:ids.shape[1] - 2 + step]
            mine = model(token, past_key_values=mine.past_key_values, use_cache=True)
            theirs = reference(token, past_key_values=theirs.past_key_values, use_cache=True)
            errors[f"decode step {step}"] = relative_error(mine.logits, theirs.logits)
    for name, error in errors.items():
        # bf16 activations through 4 layers: both paths round alike, so a few percent of the
        # largest logit bounds honest differences; a wrong mask or head mapping is far larger.
        ok = error < 0.03
        print(f"{'ok' if ok else 'FAILED':6} {name}: max error {error:.3g} of the largest logit")
        if not ok:
            failures.append(name)
    print(f"attention calls: {fajit_transformers.calls}")
    # Each fa-jit model call runs every layer once: 5 calls of 4 layers.
    if fajit_transformers.calls != {"fajit": 5 * config.num_hidden_layers, "sdpa": 0}:
        failures.append("every attention call of the fa-jit model, and none of SDPA's, runs on fa-jit")
        print("FAILED every attention call of the fa-jit model, and none of SDPA's, runs on fa-jit")
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
