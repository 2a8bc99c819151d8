#include "runtime/tensor_maps.hpp"

#include <cstdint>
#include <cstring>

namespace fajit {
namespace {

constexpr std::uint32_t swizzle_bytes = 128;  // a box is one 128-byte swizzle row wide

// One tensor's map; empty on success, else why not, naming the tensor.
std::string plan_one(const char* name, const void* base, std::uint64_t element_bytes, const Strides& strides,
                     int columns, int rows, int heads, int batch, int box_rows, TensorMapRequest& map) {
    if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return std::string(name) + " is not 16-byte aligned";
    map.base = base;
    map.element_bytes = static_cast<std::uint32_t>(element_bytes);
    map.extents[0] = static_cast<std::uint64_t>(columns);
    map.extents[1] = static_cast<std::uint64_t>(rows);
    map.extents[2] = static_cast<std::uint64_t>(heads);
    map.extents[3] = static_cast<std::uint64_t>(batch);
    const std::int64_t element_strides[3] = {strides.sequence, strides.head, strides.batch};
    std::uint64_t below = static_cast<std::uint64_t>(columns) * element_bytes;  // a tight stride for a lone index
    for (int d = 0; d < 3; ++d) {
        const std::int64_t stride = element_strides[d];
        if (map.extents[d + 1] == 1) {
            // A dimension of one index is never stepped; any valid stride describes it.
            map.stride_bytes[d] = below;
        } else {
            if (stride <= 0) return std::string(name) + " has a broadcast (zero) stride";
            map.stride_bytes[d] = static_cast<std::uint64_t>(stride) * element_bytes;
            if (map.stride_bytes[d] % 16 != 0) return std::string(name) + " has a stride off 16 bytes";
        }
        below = map.stride_bytes[d] * map.extents[d + 1];
    }
    map.box[0] = swizzle_bytes / static_cast<std::uint32_t>(element_bytes);
    map.box[1] = static_cast<std::uint32_t>(box_rows);
    return {};
}

}  // namespace

std::string plan_tensor_maps(const KernelSpec& spec, const AttentionArgs& args, std::array<TensorMapRequest, 3>& maps) {
    if (args.kv_layout != KvLayout::dense) return "a batched layout (its rows are looked up per sequence)";
    const auto bytes = static_cast<std::uint64_t>(element_bytes(args.dtype));
    if (auto why = plan_one("q", args.q, bytes, args.q_strides, args.head_dim, args.len_q, args.heads_q, args.batch,
                            spec.block_q, maps[0]);
        !why.empty())
        return why;
    if (auto why = plan_one("k", args.k, bytes, args.k_strides, args.head_dim, args.len_k, args.heads_kv, args.batch,
                            spec.block_k, maps[1]);
        !why.empty())
        return why;
    return plan_one("v", args.v, bytes, args.v_strides, value_head_dim(args), args.len_k, args.heads_kv, args.batch,
                    spec.block_k, maps[2]);
}

void fill_tensor_maps(const KernelSpec& spec, const AttentionArgs& args, const Backend& backend,
                      KernelArguments& arguments) {
    arguments.tensor_maps_ready = 0;
    std::array<TensorMapRequest, 3> maps;
    if (!plan_tensor_maps(spec, args, maps).empty()) return;
    for (int i = 0; i < 3; ++i) {
        TensorMap encoded;
        if (!backend.encode_tensor_map(maps[i], encoded).empty()) return;
        std::memcpy(arguments.tensor_maps[i].bytes, encoded.data(), encoded.size());
    }
    arguments.tensor_maps_ready = 1;
}

}  // namespace fajit
