#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>

#include "fajit/attention.hpp"

namespace fajit {
namespace {

// CUDA limits grid dimensions y and z, which carry heads and batch, to 65535 blocks.
constexpr int max_grid_yz = 65535;
constexpr int max_device_ordinal = 65535;  // dispatch keys hold 24 bits of it

std::string field(std::string_view name, const std::string& value, std::string_view rule) {
    return std::string(name) + "=" + value + ": " + std::string(rule);
}

std::string hex(const void* pointer) {
    char text[2 + 2 * sizeof(void*) + 1];
    const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pointer));
    std::snprintf(text, sizeof text, "0x%llx", address);
    return text;
}

using Dimension = std::tuple<std::string_view, std::int64_t, int>;  // name, stride, extent

// A written tensor's rows must not share an element, or two blocks would write it. Each
// dimension's stride must pass the last element its finer dimensions reach (taken in
// stride order, from the row itself), as every framework's non-overlapping layout does;
// a stride at least the row's width can still step into another dimension's rows, as a
// head stride equal to the sequence stride would. Of two equal strides the coarser
// dimension (batch over head over sequence) is named.
std::string check_rows_apart(const auto& name, const Dimension (&dimensions)[3], int head_dim) {
    Dimension by_stride[3] = {dimensions[2], dimensions[1], dimensions[0]};
    std::stable_sort(std::begin(by_stride), std::end(by_stride),
                     [](const Dimension& a, const Dimension& b) { return std::get<1>(a) < std::get<1>(b); });
    std::int64_t reach = head_dim - 1;  // the last element of the row; sums cannot overflow, checked above
    for (const auto& [dimension, stride, extent] : by_stride) {
        if (extent == 1) continue;
        if (stride <= reach)
            return field(name(dimension), std::to_string(stride),
                         "output rows would overlap: the dimensions of finer strides reach element " +
                             std::to_string(reach) + ", so this stride must be at least " + std::to_string(reach + 1));
        reach += stride * (extent - 1);
    }
    return {};
}

// head_dim: the elements of the tensor's rows, named dim_name in messages.
std::string check_strides(std::string_view tensor, const Strides& strides, int batch, int heads, int length,
                          std::string_view dim_name, int head_dim, bool written) {
    // Messages are built only on failure: this runs on every call.
    const auto name = [&](std::string_view dimension) {
        return std::string(tensor) + "_strides." + std::string(dimension);
    };
    const Dimension dimensions[] = {
        {"batch", strides.batch, batch}, {"head", strides.head, heads}, {"sequence", strides.sequence, length}};
    for (const auto& [dimension, stride, extent] : dimensions) {
        if (stride < 0) return field(name(dimension), std::to_string(stride), "strides must not be negative");
        // A dimension of one element is never stepped along, so its stride does not matter
        // (frameworks report arbitrary ones for such views).
        if (extent == 1) continue;
        if (written && stride < head_dim)
            return field(name(dimension), std::to_string(stride),
                         "output rows would overlap: must be at least " + std::string(dim_name) + " (" +
                             std::to_string(head_dim) + ")");
        if (stride != 0 && stride < head_dim)
            return field(name(dimension), std::to_string(stride),
                         "rows would overlap within the contiguous head dimension: must be 0 (broadcast) or at "
                         "least " +
                             std::string(dim_name) + " (" + std::to_string(head_dim) + ")");
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
    if (written) return check_rows_apart(name, dimensions, head_dim);
    return {};
}

// A dtype's name, or its number when it names none (a C caller's out-of-range value).
std::string dtype_text(DType dtype) {
    const std::string_view name = to_string(dtype);
    return name == "?" ? std::to_string(static_cast<int>(dtype)) : std::string(name);
}

bool batched(const AttentionArgs& args) { return args.kv_layout != KvLayout::dense; }

// Element extents of each strided tensor's {batch, head, sequence} dimensions.
struct Extents {
    int batch, heads, length;
};
Extents query_extents(const AttentionArgs& args) {
    return batched(args) ? Extents{1, args.heads_q, args.sequences.total_q}
                         : Extents{args.batch, args.heads_q, args.len_q};
}
Extents key_extents(const AttentionArgs& args) {
    const SequenceBatch& s = args.sequences;
    switch (args.kv_layout) {
        case KvLayout::ragged:
            return {1, args.heads_kv, s.total_k};
        case KvLayout::paged:
            return {s.num_pages, args.heads_kv, s.page_size};
        case KvLayout::dense:
            break;
    }
    return {args.batch, args.heads_kv, args.len_k};
}

// The SequenceBatch fields a layout uses must be given and the others left unset, so a
// field filled for another layout is caught rather than silently ignored.
std::string check_sequences(const AttentionArgs& args) {
    const SequenceBatch& s = args.sequences;
    const bool ragged = args.kv_layout == KvLayout::ragged, paged = args.kv_layout == KvLayout::paged;
    const auto needs = [](bool used, std::string_view name, const void* pointer) -> std::string {
        if (used && !pointer) return field(name, "null", "required by this kv_layout");
        if (!used && pointer)
            return field(name, hex(pointer), "given, but this kv_layout does not use it");
        if (pointer && reinterpret_cast<std::uintptr_t>(pointer) % alignof(int) != 0)
            return field(name, hex(pointer), "must be aligned to 4 bytes (int32)");
        return {};
    };
    const std::tuple<bool, std::string_view, const void*> pointers[] = {
        {ragged || paged, "cu_seqlens_q", s.cu_seqlens_q},
        {ragged, "cu_seqlens_k", s.cu_seqlens_k},
        {paged, "block_table", s.block_table},
        {paged, "kv_lens", s.kv_lens}};
    for (const auto& [used, name, pointer] : pointers)
        if (auto error = needs(used, name, pointer); !error.empty()) return error;
    const std::tuple<bool, std::string_view, int> sizes[] = {{ragged || paged, "total_q", s.total_q},
                                                             {ragged, "total_k", s.total_k},
                                                             {paged, "max_pages_per_seq", s.max_pages_per_seq},
                                                             {paged, "num_pages", s.num_pages},
                                                             {paged, "page_size", s.page_size}};
    for (const auto& [used, name, value] : sizes) {
        if (used && value <= 0)
            return field(name, std::to_string(value), "must be positive");
        if (!used && value != 0)
            return field(name, std::to_string(value),
                         "given, but this kv_layout does not use it: leave it 0");
    }
    if (paged) {
        if ((s.page_size & (s.page_size - 1)) != 0 || s.page_size > 256)
            return field("page_size", std::to_string(s.page_size), "must be a power of two from 1 to 256");
        // The kernels count a sequence's keys in int: its pages must hold fewer than 2^31.
        if (static_cast<long long>(s.max_pages_per_seq) * s.page_size > std::numeric_limits<int>::max())
            return field("max_pages_per_seq", std::to_string(s.max_pages_per_seq),
                         "pages of " + std::to_string(s.page_size) + " keys would hold 2^31 keys or more");
        if (static_cast<long long>(s.max_pages_per_seq) * s.page_size < args.len_k)
            return field("len_k", std::to_string(args.len_k),
                         "more keys than max_pages_per_seq (" + std::to_string(s.max_pages_per_seq) + ") pages of " +
                             std::to_string(s.page_size) + " hold");
    }
    if (ragged || paged) {
        if (args.len_q > s.total_q)
            return field("len_q", std::to_string(args.len_q),
                         "the longest sequence's query rows exceed total_q (" + std::to_string(s.total_q) + ")");
        if (ragged && args.len_k > s.total_k)
            return field("len_k", std::to_string(args.len_k),
                         "the longest sequence's keys exceed total_k (" + std::to_string(s.total_k) + ")");
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
    if (batched(args)) {
        if (shape.batch != 1 || shape.heads != args.heads_q || shape.length != args.sequences.total_q)
            return field("lse_shape", given(),
                         "must be {1, heads_q, total_q} = {1," + std::to_string(args.heads_q) + "," +
                             std::to_string(args.sequences.total_q) + "} (contiguous f32, packed like q)");
        return {};
    }
    if (shape.batch != args.batch || shape.heads != args.heads_q || shape.length != args.len_q)
        return field("lse_shape", given(),
                     "must be {batch, heads_q, len_q} = {" + std::to_string(args.batch) + "," +
                         std::to_string(args.heads_q) + "," + std::to_string(args.len_q) + "} (contiguous f32)");
    return {};
}

// The dtype of o and the descale factors: e4m3 inputs only.
std::string check_fp8(const AttentionArgs& args) {
    const Descale& descale = args.descale;
    const std::pair<std::string_view, const float*> factors[] = {
        {"q_descale", descale.q}, {"k_descale", descale.k}, {"v_descale", descale.v}};
    if (args.dtype != DType::e4m3) {
        if (args.o_dtype)
            return field("o_dtype", dtype_text(*args.o_dtype),
                         "only e4m3 inputs take one (o has dtype " + std::string(to_string(args.dtype)) + ")");
        for (const auto& [name, pointer] : factors)
            if (pointer) return field(name, hex(pointer), "only e4m3 inputs take descale factors");
        if (descale.heads != 0)
            return field("descale_heads", std::to_string(descale.heads), "only e4m3 inputs take descale factors");
        return {};
    }
    if (!args.o_dtype || (*args.o_dtype != DType::f16 && *args.o_dtype != DType::bf16))
        return field("o_dtype", args.o_dtype ? dtype_text(*args.o_dtype) : "none",
                     "e4m3 inputs need an f16 or bf16 o");
    bool any = false;
    for (const auto& [name, pointer] : factors) {
        if (reinterpret_cast<std::uintptr_t>(pointer) % alignof(float) != 0)
            return field(name, hex(pointer), "must be aligned to its 4-byte f32 elements");
        any = any || pointer;
    }
    if (!any && descale.heads != 0)
        return field("descale_heads", std::to_string(descale.heads), "must be 0 when no descale factor is given");
    if (any && descale.heads != 1 && descale.heads != args.heads_kv)
        return field("descale_heads", std::to_string(descale.heads),
                     "must be 1 (a factor per tensor) or heads_kv (" + std::to_string(args.heads_kv) +
                         ", a factor per KV head)");
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
    if (!supported_head_dim(args.head_dim))
        return field("head_dim", std::to_string(args.head_dim), "supported head dims are 16..256 in steps of 8");
    if (args.head_dim_v != 0 && !supported_head_dim(args.head_dim_v))
        return field("head_dim_v", std::to_string(args.head_dim_v),
                     "supported head dims are 16..256 in steps of 8, or 0 for head_dim");
    if (args.dtype != DType::f16 && args.dtype != DType::bf16 && args.dtype != DType::f32 && args.dtype != DType::e4m3)
        return field("dtype", dtype_text(args.dtype), "expected f16, bf16, f32 or e4m3");
    if (auto error = check_fp8(args); !error.empty()) return error;
    if (args.causal != CausalMode::none && args.causal != CausalMode::top_left &&
        args.causal != CausalMode::bottom_right)
        return field("causal", std::to_string(static_cast<int>(args.causal)),
                     "expected none, top-left or bottom-right");
    if (args.kv_layout != KvLayout::dense && args.kv_layout != KvLayout::ragged && args.kv_layout != KvLayout::paged)
        return field("kv_layout", std::to_string(static_cast<int>(args.kv_layout)), "expected dense, ragged or paged");
    if (auto error = check_sequences(args); !error.empty()) return error;
    if (!std::isfinite(args.scale)) return field("scale", std::to_string(args.scale), "must be finite");
    if (args.device < 0 || args.device > max_device_ordinal)
        return field("device", std::to_string(args.device), "must be within 0..65535");
    if (args.window) {
        // Named as the C ABI, the torch op and the Rust crate name them (window->left here).
        for (const auto& [name, extent] :
             {std::pair<std::string_view, int>{"window_left", args.window->left}, {"window_right", args.window->right}})
            if (extent < -1) return field(name, std::to_string(extent), "must be -1 (unbounded) or a key count >= 0");
    }
    if (!std::isfinite(args.softcap) || args.softcap < 0.0f)
        return field("softcap", std::to_string(args.softcap), "must be finite and >= 0 (0: no soft-cap)");
    if (reinterpret_cast<std::uintptr_t>(args.sinks) % alignof(float) != 0)
        return field("sinks", hex(args.sinks), "must be aligned to its 4-byte f32 elements");

    for (const auto& [name, pointer] : pointers) {
        const DType dtype = name == "o" ? args.o_dtype.value_or(args.dtype) : args.dtype;
        const int bytes = element_bytes(dtype);
        if (reinterpret_cast<std::uintptr_t>(pointer) % bytes != 0)
            return field(name, hex(pointer),
                         "must be aligned to its " + std::to_string(bytes) + "-byte " + std::string(to_string(dtype)) +
                             " elements");
    }
    if (auto error = check_lse(args); !error.empty()) return error;

    const Extents queries = query_extents(args), keys = key_extents(args);
    const std::string_view value_dim_name = args.head_dim_v != 0 ? "head_dim_v" : "head_dim";
    const int value_dim = value_head_dim(args);
    const std::tuple<std::string_view, const Strides&, const Extents&, std::string_view, int, bool> tensors[] = {
        {"q", args.q_strides, queries, "head_dim", args.head_dim, false},
        {"k", args.k_strides, keys, "head_dim", args.head_dim, false},
        {"v", args.v_strides, keys, value_dim_name, value_dim, false},
        {"o", args.o_strides, queries, value_dim_name, value_dim, true}};
    for (const auto& [name, strides, extents, dim_name, row_elements, written] : tensors)
        if (auto error = check_strides(name, strides, extents.batch, extents.heads, extents.length, dim_name,
                                       row_elements, written);
            !error.empty())
            return error;
    return {};
}

}  // namespace fajit
