#include "support/sequence_batch_case.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "support/test_device.hpp"

namespace fajit::testing {
namespace {

// Logical index into a sequence's [1, heads, length, head_dim] values.
std::size_t logical(int length, int head_dim, int h, int t, int d) {
    return (static_cast<std::size_t>(h) * length + t) * head_dim + d;
}

std::vector<int> cumulative(const std::vector<int>& lengths) {
    std::vector<int> offsets(lengths.size() + 1, 0);
    std::partial_sum(lengths.begin(), lengths.end(), offsets.begin() + 1);
    return offsets;
}

int longest(const std::vector<int>& lengths) { return std::max(1, *std::max_element(lengths.begin(), lengths.end())); }

// Device buffers are neither copied nor moved: size one for values, then fill it.
template <class T>
std::size_t bytes_for(const std::vector<T>& values) {
    return std::max<std::size_t>(1, values.size()) * sizeof(T);
}
template <class T>
void upload_any(DeviceBuffer& buffer, const std::vector<T>& values) {
    if (!values.empty()) buffer.upload(values);
}

// Where key t of sequence b lives in the paged cache: a shuffled page order, so no
// sequence's pages are consecutive, and a garbage entry in every unused slot.
struct PageMap {
    std::vector<int> table;  // [batch, max_pages]
    int max_pages = 1;
    int num_pages = 0;
};
PageMap map_pages(const BatchShape& shape, std::uint64_t seed) {
    PageMap map;
    std::vector<int> pages_of(static_cast<std::size_t>(shape.batch()));
    for (int b = 0; b < shape.batch(); ++b) {
        pages_of[b] = (shape.len_k[b] + shape.page_size - 1) / shape.page_size;
        map.max_pages = std::max(map.max_pages, pages_of[b]);
        map.num_pages += pages_of[b];
    }
    map.num_pages += 3;  // spare pages no sequence uses
    std::vector<int> order(static_cast<std::size_t>(map.num_pages));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    map.table.assign(static_cast<std::size_t>(shape.batch()) * map.max_pages, 1 << 30);
    std::size_t next = 0;
    for (int b = 0; b < shape.batch(); ++b)
        for (int slot = 0; slot < pages_of[b]; ++slot) map.table[b * map.max_pages + slot] = order[next++];
    return map;
}

}  // namespace

CaseShape BatchShape::sequence(int index) const {
    CaseShape shape;
    shape.batch = 1;
    shape.heads_q = heads_q;
    shape.heads_kv = heads_kv;
    shape.len_q = len_q[index];
    shape.len_k = len_k[index];
    shape.head_dim = head_dim;
    shape.head_dim_v = head_dim_v;
    shape.dtype = dtype;
    shape.causal = causal;
    shape.scale = scale;
    shape.with_lse = with_lse;
    shape.window = window;
    shape.softcap = softcap;
    shape.sinks = sinks;
    return shape;
}

std::string BatchShape::describe() const {
    std::string lengths;
    for (int b = 0; b < batch(); ++b)
        lengths += (b ? "," : "") + std::to_string(len_q[b]) + "x" + std::to_string(len_k[b]);
    return std::string(to_string(kv_layout)) +
           (kv_layout == KvLayout::paged ? " page=" + std::to_string(page_size) + (heads_first ? " HND" : " NHD")
                                         : std::string()) +
           " seqs=" + lengths + " Hq=" + std::to_string(heads_q) + " Hkv=" + std::to_string(heads_kv) +
           " D=" + std::to_string(head_dim) + (head_dim_v ? " Dv=" + std::to_string(head_dim_v) : "") + " " +
           std::string(to_string(dtype)) +
           " causal=" + std::string(to_string(causal)) + (with_lse ? " lse" : "") +
           describe_features(window, softcap, !sinks.empty());
}

std::vector<CaseInputs> random_batch_inputs(const BatchShape& shape, std::uint64_t seed) {
    std::vector<CaseInputs> inputs;
    for (int b = 0; b < shape.batch(); ++b) inputs.push_back(random_inputs(shape.sequence(b), seed * 1000 + b));
    return inputs;
}

std::vector<Outputs> run_batch_on_device(Runtime& runtime, const KernelSpec* spec, const BatchShape& shape,
                                         const std::vector<CaseInputs>& inputs, std::uint64_t seed) {
    const int batch = shape.batch(), d = shape.head_dim, dv = shape.value_dim(), hq = shape.heads_q,
              hkv = shape.heads_kv;
    const std::size_t bytes = element_bytes(shape.dtype);
    const std::vector<int> cu_q = cumulative(shape.len_q), cu_k = cumulative(shape.len_k);
    const int total_q = cu_q.back(), total_k = cu_k.back();

    // q: [total_q, heads_q, d] and o: [total_q, heads_q, dv], contiguous.
    std::vector<unsigned char> q(std::max(1, total_q) * static_cast<std::size_t>(hq) * d * bytes, 0);
    const std::size_t o_bytes = std::max(1, total_q) * static_cast<std::size_t>(hq) * dv * bytes;
    for (int b = 0; b < batch; ++b)
        for (int h = 0; h < hq; ++h)
            for (int t = 0; t < shape.len_q[b]; ++t)
                for (int c = 0; c < d; ++c)
                    store_element(shape.dtype, q.data(), ((cu_q[b] + t) * static_cast<std::size_t>(hq) + h) * d + c,
                                  inputs[b].q[logical(shape.len_q[b], d, h, t, c)]);

    AttentionArgs args;
    args.kv_layout = shape.kv_layout;
    args.dtype = shape.dtype;
    args.batch = batch;
    args.heads_q = hq;
    args.heads_kv = hkv;
    args.len_q = longest(shape.len_q);
    args.len_k = longest(shape.len_k);
    args.head_dim = d;
    args.head_dim_v = shape.head_dim_v;
    args.scale = shape.scale;
    args.causal = shape.causal;
    args.window = shape.window;
    args.softcap = shape.softcap;
    args.q_strides = {0, d, static_cast<std::int64_t>(hq) * d};
    args.o_strides = {0, dv, static_cast<std::int64_t>(hq) * dv};
    args.sequences.total_q = total_q;

    // K/V storage, and where key t of sequence b goes in it: the same rows and pages for
    // both, V's rows of dv elements.
    std::vector<unsigned char> k, v;
    PageMap pages;
    std::function<std::size_t(int, int, int, int)> key_row;  // (b, kv head, t, row dim) -> element offset
    if (shape.kv_layout == KvLayout::ragged) {
        k.assign(std::max(1, total_k) * static_cast<std::size_t>(hkv) * d * bytes, 0);
        v.assign(std::max(1, total_k) * static_cast<std::size_t>(hkv) * dv * bytes, 0);
        key_row = [&](int b, int h, int t, int row_dim) {
            return ((cu_k[b] + t) * static_cast<std::size_t>(hkv) + h) * row_dim;
        };
        args.k_strides = {0, d, static_cast<std::int64_t>(hkv) * d};
        args.v_strides = {0, dv, static_cast<std::int64_t>(hkv) * dv};
        args.sequences.total_k = total_k;
    } else {
        pages = map_pages(shape, seed);
        const auto page_strides = [&](int row_dim) {
            const std::int64_t page = static_cast<std::int64_t>(shape.page_size) * hkv * row_dim;
            return shape.heads_first ? Strides{page, static_cast<std::int64_t>(shape.page_size) * row_dim, row_dim}
                                     : Strides{page, row_dim, static_cast<std::int64_t>(hkv) * row_dim};
        };
        args.k_strides = page_strides(d);
        args.v_strides = page_strides(dv);
        k.assign(static_cast<std::size_t>(pages.num_pages * args.k_strides.batch) * bytes, 0);
        v.assign(static_cast<std::size_t>(pages.num_pages * args.v_strides.batch) * bytes, 0);
        key_row = [&, page_strides](int b, int h, int t, int row_dim) {
            const Strides strides = page_strides(row_dim);
            const int physical = pages.table[b * pages.max_pages + t / shape.page_size];
            return static_cast<std::size_t>(physical * strides.batch + h * strides.head +
                                            (t % shape.page_size) * strides.sequence);
        };
        args.sequences.max_pages_per_seq = pages.max_pages;
        args.sequences.num_pages = pages.num_pages;
        args.sequences.page_size = shape.page_size;
    }
    for (int b = 0; b < batch; ++b)
        for (int h = 0; h < hkv; ++h)
            for (int t = 0; t < shape.len_k[b]; ++t) {
                for (int c = 0; c < d; ++c)
                    store_element(shape.dtype, k.data(), key_row(b, h, t, d) + c,
                                  inputs[b].k[logical(shape.len_k[b], d, h, t, c)]);
                for (int c = 0; c < dv; ++c)
                    store_element(shape.dtype, v.data(), key_row(b, h, t, dv) + c,
                                  inputs[b].v[logical(shape.len_k[b], dv, h, t, c)]);
            }

    DeviceBuffer q_device = device_buffer(bytes_for(q)), k_device = device_buffer(bytes_for(k)),
                 v_device = device_buffer(bytes_for(v)), o_device = device_buffer(o_bytes),
                 lse_device = device_buffer(std::max(1, total_q) * static_cast<std::size_t>(hq) * sizeof(float)),
                 cu_q_device = device_buffer(bytes_for(cu_q)), cu_k_device = device_buffer(bytes_for(cu_k)),
                 table_device = device_buffer(bytes_for(pages.table)),
                 lens_device = device_buffer(bytes_for(shape.len_k)),
                 sinks_device = device_buffer(bytes_for(shape.sinks));
    upload_any(q_device, q);
    upload_any(sinks_device, shape.sinks);
    if (!shape.sinks.empty()) args.sinks = static_cast<const float*>(sinks_device.get());
    upload_any(k_device, k);
    upload_any(v_device, v);
    upload_any(cu_q_device, cu_q);
    upload_any(cu_k_device, cu_k);
    upload_any(table_device, pages.table);
    upload_any(lens_device, shape.len_k);
    o_device.fill(0xff);  // NaN in every element type: a row never written stays NaN
    lse_device.fill(0xff);
    args.q = q_device.get();
    args.k = k_device.get();
    args.v = v_device.get();
    args.o = o_device.get();
    if (shape.with_lse) {
        args.lse = static_cast<float*>(lse_device.get());
        args.lse_shape = {1, hq, total_q};
    }
    args.sequences.cu_seqlens_q = static_cast<const int*>(cu_q_device.get());
    if (shape.kv_layout == KvLayout::ragged) args.sequences.cu_seqlens_k = static_cast<const int*>(cu_k_device.get());
    if (shape.kv_layout == KvLayout::paged) {
        args.sequences.block_table = static_cast<const int*>(table_device.get());
        args.sequences.kv_lens = static_cast<const int*>(lens_device.get());
    }
    if (spec)
        runtime.run(*spec, args, nullptr);
    else
        runtime.attention(args, nullptr);
    synchronize_test_device();

    const auto o = o_device.download<unsigned char>();
    const auto lse = lse_device.download<float>();
    std::vector<Outputs> outputs(static_cast<std::size_t>(batch));
    for (int b = 0; b < batch; ++b) {
        Outputs& out = outputs[b];
        out.o.resize(static_cast<std::size_t>(hq) * shape.len_q[b] * dv);
        for (int h = 0; h < hq; ++h)
            for (int t = 0; t < shape.len_q[b]; ++t) {
                for (int c = 0; c < dv; ++c)
                    out.o[logical(shape.len_q[b], dv, h, t, c)] = load_element(
                        shape.dtype, o.data(), ((cu_q[b] + t) * static_cast<std::size_t>(hq) + h) * dv + c);
                if (shape.with_lse) out.lse.push_back(lse[static_cast<std::size_t>(h) * total_q + cu_q[b] + t]);
            }
    }
    return outputs;
}

Comparison compare_batch(const BatchShape& shape, const std::vector<CaseInputs>& inputs,
                         const std::vector<Outputs>& got, double extra_relative) {
    Comparison total;
    for (int b = 0; b < shape.batch(); ++b) {
        const CaseShape one = shape.sequence(b);
        const Comparison result =
            compare(one, got[b], reference_attention(one, inputs[b]), output_tolerance(one, inputs[b], extra_relative));
        if (result.bad_elements && !total.bad_elements)
            total.first_bad = "sequence " + std::to_string(b) + ": " + result.first_bad;
        total.bad_elements += result.bad_elements;
        total.max_error = std::max(total.max_error, result.max_error);
        total.max_lse_error = std::max(total.max_lse_error, result.max_lse_error);
    }
    return total;
}

}  // namespace fajit::testing
