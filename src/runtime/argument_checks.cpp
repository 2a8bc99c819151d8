#include <cmath>
#include <limits>
#include <string>

#include "fajit/attention.hpp"

namespace fajit {
namespace {

std::string field(std::string_view name, const std::string& value, std::string_view rule) {
    return std::string(name) + "=" + value + ": " + std::string(rule);
}

// Largest element offset a tensor reaches, or an error when it overflows int64.
std::string check_strides(std::string_view tensor, const Strides& strides, int batch, int heads, int length,
                          int head_dim, bool written) {
    const std::pair<std::string_view, std::int64_t> items[] = {
        {"batch", strides.batch}, {"head", strides.head}, {"sequence", strides.sequence}};
    for (const auto& [name, value] : items)
        if (value < 0)
            return field(std::string(tensor) + "_strides." + std::string(name), std::to_string(value),
                         "strides must not be negative");
    if (written && strides.sequence < head_dim)
        return field(std::string(tensor) + "_strides.sequence", std::to_string(strides.sequence),
                     "output rows would overlap: must be at least head_dim (" + std::to_string(head_dim) + ")");
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    std::int64_t reach = head_dim - 1;
    const std::pair<std::int64_t, int> extents[] = {
        {strides.batch, batch}, {strides.head, heads}, {strides.sequence, length}};
    for (const auto& [stride, count] : extents) {
        const std::int64_t span = count - 1;
        if (stride != 0 && span > (max - reach) / stride)
            return field(std::string(tensor) + "_strides", "{" + std::to_string(strides.batch) + "," +
                                                                std::to_string(strides.head) + "," +
                                                                std::to_string(strides.sequence) + "}",
                         "the largest element offset overflows a 64-bit index");
        reach += stride * span;
    }
    return {};
}

}  // namespace

std::string check_arguments(const AttentionArgs& args) {
    const std::pair<std::string_view, const void*> pointers[] = {{"q", args.q}, {"k", args.k}, {"v", args.v}, {"o", args.o}};
    for (const auto& [name, pointer] : pointers)
        if (!pointer) return field(name, "null", "a device pointer is required");

    const std::pair<std::string_view, int> sizes[] = {{"batch", args.batch},     {"heads_q", args.heads_q},
                                                      {"heads_kv", args.heads_kv}, {"len_q", args.len_q},
                                                      {"len_k", args.len_k},     {"head_dim", args.head_dim}};
    for (const auto& [name, value] : sizes)
        if (value <= 0) return field(name, std::to_string(value), "must be positive");
    if (args.heads_q % args.heads_kv != 0)
        return field("heads_q", std::to_string(args.heads_q),
                     "must be a multiple of heads_kv (" + std::to_string(args.heads_kv) + ")");
    if (args.head_dim < 16 || args.head_dim > 256 || args.head_dim % 8 != 0)
        return field("head_dim", std::to_string(args.head_dim), "supported head dims are 16..256 in steps of 8");
    if (args.dtype != DType::f16 && args.dtype != DType::bf16 && args.dtype != DType::f32)
        return field("dtype", std::to_string(static_cast<int>(args.dtype)), "expected f16, bf16 or f32");
    if (args.causal != CausalMode::none && args.causal != CausalMode::top_left &&
        args.causal != CausalMode::bottom_right)
        return field("causal", std::to_string(static_cast<int>(args.causal)), "expected none, top-left or bottom-right");
    if (!std::isfinite(args.scale)) return field("scale", std::to_string(args.scale), "must be finite");
    if (args.device < 0) return field("device", std::to_string(args.device), "must not be negative");

    if (auto error = check_strides("q", args.q_strides, args.batch, args.heads_q, args.len_q, args.head_dim, false);
        !error.empty())
        return error;
    if (auto error = check_strides("k", args.k_strides, args.batch, args.heads_kv, args.len_k, args.head_dim, false);
        !error.empty())
        return error;
    if (auto error = check_strides("v", args.v_strides, args.batch, args.heads_kv, args.len_k, args.head_dim, false);
        !error.empty())
        return error;
    return check_strides("o", args.o_strides, args.batch, args.heads_q, args.len_q, args.head_dim, true);
}

}  // namespace fajit
