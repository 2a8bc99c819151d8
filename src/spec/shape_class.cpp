#include "spec/shape_class.hpp"

namespace fajit {

QueryLength classify_query_length(int len_q) {
    if (len_q <= 4) return QueryLength::decode;
    if (len_q <= 64) return QueryLength::small;
    return QueryLength::large;
}

ShapeClass classify(const AttentionArgs& args) {
    return {args.head_dim,  args.dtype,
            args.causal,    classify_query_length(args.len_q),
            args.kv_layout, args.kv_layout == KvLayout::paged ? args.sequences.page_size : 0};
}

std::uint64_t dispatch_key(int device, const ShapeClass& shape) {
    // check_arguments bounds head_dim to 16..256 (9 bits), the page size to 0..256 (9 bits)
    // and the enums to a few values (2 bits each); the device ordinal takes the upper 32 bits.
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(device)) << 32 |
           static_cast<std::uint64_t>(shape.head_dim) << 20 | static_cast<std::uint64_t>(shape.page_size) << 10 |
           static_cast<std::uint64_t>(shape.kv_layout) << 6 | static_cast<std::uint64_t>(shape.dtype) << 4 |
           static_cast<std::uint64_t>(shape.causal) << 2 | static_cast<std::uint64_t>(shape.query_length);
}

}  // namespace fajit
