#include "spec/shape_class.hpp"

#include <bit>

namespace fajit {

QueryLength classify_query_length(int len_q) {
    if (len_q <= 4) return QueryLength::decode;
    if (len_q <= 64) return QueryLength::small;
    return QueryLength::large;
}

int classify_decode_rows(int len_q, int heads_q, int heads_kv) {
    const long long pairs = static_cast<long long>(len_q) * (heads_q / heads_kv);
    if (pairs > decode_rows_max) return 0;
    int rows = 1;
    while (rows < pairs) rows *= 2;
    return rows;
}

ShapeClass classify(const AttentionArgs& args) {
    return {args.head_dim,
            args.dtype,
            args.causal,
            classify_query_length(args.len_q),
            args.kv_layout,
            args.kv_layout == KvLayout::paged ? args.sequences.page_size : 0,
            classify_decode_rows(args.len_q, args.heads_q, args.heads_kv),
            args.window.has_value(),
            args.softcap > 0.0f,
            args.sinks != nullptr,
            args.head_dim_v == args.head_dim ? 0 : args.head_dim_v,
            args.o_dtype};
}

std::uint64_t dispatch_key(int device, const ShapeClass& shape) {
    // check_arguments bounds head_dim to 16..256 (9 bits), the page size to 0..256 (9 bits)
    // and the enums to a few values (2 bits each); decode rows are 0 or a power of two up
    // to 32 (3 bits as log2 + 1); the features take a bit each above those, then
    // head_dim_v (0..256, 9 bits), O's dtype where it differs (none, f16 or bf16: 2 bits),
    // and the device ordinal (check_arguments: at most
    // 65535) the upper 16 bits.
    const int decode_bits = shape.decode_rows == 0 ? 0 : std::countr_zero(static_cast<unsigned>(shape.decode_rows)) + 1;
    const std::uint64_t features = (shape.window ? 1u : 0u) | (shape.softcap ? 2u : 0u) | (shape.sinks ? 4u : 0u);
    const std::uint64_t out_dtype = shape.out_dtype ? static_cast<std::uint64_t>(*shape.out_dtype) + 1 : 0;
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(device)) << 48 | out_dtype << 44 |
           static_cast<std::uint64_t>(shape.head_dim_v) << 35 | features << 32 |
           static_cast<std::uint64_t>(decode_bits) << 29 | static_cast<std::uint64_t>(shape.head_dim) << 20 |
           static_cast<std::uint64_t>(shape.page_size) << 10 | static_cast<std::uint64_t>(shape.kv_layout) << 6 |
           static_cast<std::uint64_t>(shape.dtype) << 4 | static_cast<std::uint64_t>(shape.causal) << 2 |
           static_cast<std::uint64_t>(shape.query_length);
}

}  // namespace fajit
