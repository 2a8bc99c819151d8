#include "presets.hpp"

namespace fajit::cli {
namespace {

// Head dims (hidden size / attention heads), GQA groups (attention heads / key-value
// heads) and features from the models' published configs: Mistral 7B v0.1's 4096-key
// window, Gemma 2's soft-cap of 50 with 4096-key windows on every other layer, and
// gpt-oss's sinks on every layer with 128-key windows on every other. DeepSeek-V3's MLA
// prefill runs multi-head attention (a KV head per query head) on queries and keys of 192
// head dims (qk_nope_head_dim 128 + qk_rope_head_dim 64) and values of 128 (v_head_dim).
constexpr Preset known_presets[] = {
    {"llama-3", 128, 0, 4, false, false, false, "Llama 3 and 3.1 (8B, 70B, 405B), Llama 3.2 3B"},
    {"qwen2.5", 128, 0, 7, false, false, false, "Qwen2.5 7B (1.5B to 72B share the head dim)"},
    {"mistral", 128, 0, 4, true, false, false, "Mistral 7B v0.1 (window 4096), Mistral NeMo, Mixtral"},
    {"gemma-2", 256, 0, 2, true, true, false, "Gemma 2 9B (and 2B's head dim)"},
    {"gpt-oss", 64, 0, 8, true, false, true, "gpt-oss 20B and 120B"},
    {"deepseek-v3", 192, 128, 1, false, false, false, "DeepSeek-V3 and R1 (MLA prefill; V head dim 128)"},
    {"phi-2", 80, 0, 1, false, false, false, "Phi-2 (2.7B)"},
};

}  // namespace

std::span<const Preset> presets() { return known_presets; }

std::optional<Preset> find_preset(std::string_view name) {
    for (const Preset& preset : known_presets)
        if (preset.name == name) return preset;
    return std::nullopt;
}

}  // namespace fajit::cli
