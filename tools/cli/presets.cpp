#include "presets.hpp"

namespace fajit::cli {
namespace {

// Head dims from the models' published configs (hidden size / attention heads).
constexpr Preset known_presets[] = {
    {"llama-3", 128, "Llama 3 and 3.1 (8B, 70B, 405B), Llama 3.2 3B"},
    {"qwen2.5", 128, "Qwen2.5 1.5B to 72B"},
    {"mistral", 128, "Mistral 7B, Mistral NeMo, Mixtral"},
    {"gemma-2", 256, "Gemma 2 2B and 9B"},
    {"phi-2", 80, "Phi-2 (2.7B)"},
};

}  // namespace

std::span<const Preset> presets() { return known_presets; }

std::optional<Preset> find_preset(std::string_view name) {
    for (const Preset& preset : known_presets)
        if (preset.name == name) return preset;
    return std::nullopt;
}

}  // namespace fajit::cli
