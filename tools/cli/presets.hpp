#pragma once
// Named model families for `fa-jit warm --preset`: each fixes the head dims its models use,
// the query heads per KV head that size a decode tile, and the model features they need.
#include <optional>
#include <span>
#include <string_view>

namespace fajit::cli {

struct Preset {
    std::string_view name;
    int head_dim;
    int head_dim_v;  // of V and O where it differs from head_dim, else 0
    int gqa_group;   // query heads per KV head, of the first model listed
    // Model features: sliding-window layers (warmed beside the plain ones, since the models
    // alternate them with global layers), a logit soft-cap and attention sinks on every layer.
    bool window_layers;
    bool softcap;
    bool sinks;
    std::string_view models;  // which checkpoints share that head dim, for --list-presets
};

std::span<const Preset> presets();
std::optional<Preset> find_preset(std::string_view name);

}  // namespace fajit::cli
