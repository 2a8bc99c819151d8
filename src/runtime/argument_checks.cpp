#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>

#include "fajit/attention.hpp"

namespace fajit {
namespace {

// CUDA limits grid dimensions y and z, which carry heads and batch, to 65535 blocks.
constexpr int max_grid_yz = 65535;

std::string field(std::string_view name, const std::string& value, std::string_view rule) {
    return std::string(name) + "=" + value + ": " + std::string(rule);
}

std::string hex(const void* pointer) {
    char text[2 + 2 * sizeof(void*) + 1];
    const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pointer));
    std::snprintf(text, sizeof text, "0x%llx", address);
    return text;
}

std::string check_strides(std::string_view tensor, const Strides& strides, int batch, int heads, int length,
                          int head_dim, bool written) {
    // Messages are built only on failure: this runs on every call.
    const auto name = [&](std::string_view dimension) {
        return std::string(tensor) + "_strides." + std::string(dimension);
    };
    const std::tuple<std::string_view, std::int64_t, int> dimensions[] = {
        {"batch", strides.batch, batch}, {"head", strides.head, heads}, {"sequence", strides.sequence, length}};
    for (const auto& [dimension, stride, extent] : dimensions) {
        if (stride < 0) return field(name(dimension), std::to_string(stride), "strides must not be negative");
        // A dimension of one element is never stepped along, so its stride does not matter
        // (frameworks report arbitrary ones for such views).
        if (extent == 1) continue;
        if (written && stride < head_dim)
            return field(name(dimension), std::to_string(stride),
                         "output rows would overlap: must be at least head_dim (" + std::to_string(head_dim) + ")");
        if (stride != 0 && stride < head_dim)
            return field(name(dimension), std::to_string(stride),
                         "rows would overlap within the contiguous head dimension: must be 0 (broadcast) or at "
                         "least head_dim (" +
                             std::to_string(head_dim) + ")");
    }
    // Overflow builtins rather than a division per dimension: twelve divisions were most
    // of the cost of a call's checks.
    std::int64_t reach = head_dim - 1;
    for (const auto& [dimension, stride, extent] : dimensions) {
        std::int64_t step = 0;
        if (__builtin_mul_overflow(stride, std::int64_t(extent - 1), &step) ||
            __builtin_add_overflow(reach, step, &reach))
            return field(std::string(tensor) + "_strides",
                         "{" + std::to_string(strides.batch) + "," + std::to_string(strides.head) + "," +
                             std::to_string(strides.sequence) + "}",
                         "the largest element offset overflows a 64-bit index");
    }
    return {};
}

std::string check_lse(const AttentionArgs& args) {
    const LseShape& shape = args.lse_shape;
    const auto given = [&] {
        return "{" + std::to_string(shape.batch) + "," + std::to_string(shape.heads) + "," +
               std::to_string(shape.length) + "}";
    };
    if (!args.lse) {
        if (shape.batch != 0 || shape.heads != 0 || shape.length != 0)
            return field("lse_shape", given(), "given without an lse buffer: pass lse or leave lse_shape all zero");
        return {};
    }
    if (reinterpret_cast<std::uintptr_t>(args.lse) % alignof(float) != 0)
        return field("lse", hex(args.lse), "must be aligned to 4 bytes (f32)");
    if (shape.batch != args.batch || shape.heads != args.heads_q || shape.length != args.len_q)
        return field("lse_shape", given(),
                     "must be {batch, heads_q, len_q} = {" + std::to_string(args.batch) + "," +
                         std::to_string(args.heads_q) + "," + std::to_string(args.len_q) + "} (contiguous f32)");
    return {};
}

}  // namespace

std::string check_arguments(const AttentionArgs& args) {
    const std::pair<std::string_view, const void*> pointers[] = {
        {"q", args.q}, {"k", args.k}, {"v", args.v}, {"o", args.o}};
    for (const auto& [name, pointer] : pointers)
        if (!pointer) return field(name, "null", "a device pointer is required");

    const std::pair<std::string_view, int> sizes[] = {{"batch", args.batch},       {"heads_q", args.heads_q},
                                                      {"heads_kv", args.heads_kv}, {"len_q", args.len_q},
                                                      {"len_k", args.len_k},       {"head_dim", args.head_dim}};
    for (const auto& [name, value] : sizes)
        if (value <= 0) return field(name, std::to_string(value), "must be positive");
    if (args.heads_q % args.heads_kv != 0)
        return field("heads_q", std::to_string(args.heads_q),
                     "must be a multiple of heads_kv (" + std::to_string(args.heads_kv) + ")");
    if (args.heads_q > max_grid_yz)
        return field("heads_q", std::to_string(args.heads_q), "at most 65535 (one grid dimension)");
    if (args.batch > max_grid_yz)
        return field("batch", std::to_string(args.batch), "at most 65535 (one grid dimension)");
    if (args.head_dim < 16 || args.head_dim > 256 || args.head_dim % 8 != 0)
        return field("head_dim", std::to_string(args.head_dim), "supported head dims are 16..256 in steps of 8");
    if (args.dtype != DType::f16 && args.dtype != DType::bf16 && args.dtype != DType::f32)
        return field("dtype", std::to_string(static_cast<int>(args.dtype)), "expected f16, bf16 or f32");
    if (args.causal != CausalMode::none && args.causal != CausalMode::top_left &&
        args.causal != CausalMode::bottom_right)
        return field("causal", std::to_string(static_cast<int>(args.causal)),
                     "expected none, top-left or bottom-right");
    if (!std::isfinite(args.scale)) return field("scale", std::to_string(args.scale), "must be finite");
    if (args.device < 0) return field("device", std::to_string(args.device), "must not be negative");

    const std::size_t element_bytes = args.dtype == DType::f32 ? 4 : 2;
    for (const auto& [name, pointer] : pointers)
        if (reinterpret_cast<std::uintptr_t>(pointer) % element_bytes != 0)
            return field(name, hex(pointer),
                         "must be aligned to its " + std::to_string(element_bytes) + "-byte " +
                             std::string(to_string(args.dtype)) + " elements");
    if (auto error = check_lse(args); !error.empty()) return error;

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
