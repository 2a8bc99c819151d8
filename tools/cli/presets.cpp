#include "presets.hpp"

namespace fajit::cli {
namespace {

// Head dims (hidden size / attention heads) and GQA groups (attention heads / key-value
// heads) from the models' published configs.
constexpr Preset known_presets[] = {
    {"llama-3", 128, 4, "Llama 3 and 3.1 (8B, 70B, 405B), Llama 3.2 3B"},
    {"qwen2.5", 128, 7, "Qwen2.5 7B (1.5B to 72B share the head dim)"},
    {"mistral", 128, 4, "Mistral 7B, Mistral NeMo, Mixtral"},
    {"gemma-2", 256, 2, "Gemma 2 9B (and 2B's head dim)"},
    {"phi-2", 80, 1, "Phi-2 (2.7B)"},
};

}  // namespace

std::span<const Preset> presets() { return known_presets; }

std::optional<Preset> find_preset(std::string_view name) {
    for (const Preset& preset : known_presets)
        if (preset.name == name) return preset;
    return std::nullopt;
}

}  // namespace fajit::cli
