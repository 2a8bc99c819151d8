#include "support/attention_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "support/half_precision.hpp"
#include "support/test_device.hpp"

namespace fajit::testing {
namespace {

float round_to(DType dtype, float value) {
    switch (dtype) {
        case DType::f16:
            return from_f16_bits(to_f16_bits(value));
        case DType::bf16:
            return from_bf16_bits(to_bf16_bits(value));
        case DType::f32:
            return value;
        case DType::e4m3:
            return from_e4m3_bits(to_e4m3_bits(value));
    }
    return value;
}

// A tensor's descale factor for KV head kv: 1 without factors.
double factor(const std::vector<float>& factors, int kv) {
    return factors.empty() ? 1.0 : factors[static_cast<std::size_t>(kv) % factors.size()];
}

std::size_t logical_index(int heads, int length, int head_dim, int b, int h, int s, int d) {
    return ((static_cast<std::size_t>(b) * heads + h) * length + s) * head_dim + d;
}

Strides strides_for(Layout layout, int heads, int length, int head_dim) {
    switch (layout) {
        case Layout::bhsd:
            return {std::int64_t(heads) * length * head_dim, std::int64_t(length) * head_dim, head_dim};
        case Layout::bshd:
            return {std::int64_t(length) * heads * head_dim, head_dim, std::int64_t(heads) * head_dim};
        case Layout::padded: {
            const std::int64_t row = head_dim + 8;
            return {heads * length * row, length * row, row};
        }
    }
    return {};
}

// Tensors of rows of row_dim elements: head_dim for q and k, value_dim for v and o.
std::size_t storage_elements(const CaseShape& shape, int heads, int length, int row_dim) {
    const Strides s = strides_for(shape.layout, heads, length, row_dim);
    return static_cast<std::size_t>((shape.batch - 1) * s.batch + (heads - 1) * s.head + (length - 1) * s.sequence +
                                    row_dim);
}

}  // namespace

std::vector<unsigned char> pack(const CaseShape& shape, const std::vector<float>& values, int heads, int length,
                                int row_dim) {
    const Strides s = strides_for(shape.layout, heads, length, row_dim);
    const std::size_t bytes = static_cast<std::size_t>(element_bytes(shape.dtype));
    std::vector<unsigned char> storage(storage_elements(shape, heads, length, row_dim) * bytes, 0);
    for (int b = 0; b < shape.batch; ++b)
        for (int h = 0; h < heads; ++h)
            for (int t = 0; t < length; ++t)
                for (int d = 0; d < row_dim; ++d) {
                    const float value = values[logical_index(heads, length, row_dim, b, h, t, d)];
                    const std::size_t offset = static_cast<std::size_t>(b * s.batch + h * s.head + t * s.sequence + d);
                    store_element(shape.dtype, storage.data(), offset, value);
                }
    return storage;
}

std::vector<double> unpack(const CaseShape& shape, DType dtype, const std::vector<unsigned char>& storage, int heads,
                           int length, int row_dim) {
    const Strides s = strides_for(shape.layout, heads, length, row_dim);
    std::vector<double> values(static_cast<std::size_t>(shape.batch) * heads * length * row_dim);
    for (int b = 0; b < shape.batch; ++b)
        for (int h = 0; h < heads; ++h)
            for (int t = 0; t < length; ++t)
                for (int d = 0; d < row_dim; ++d) {
                    const std::size_t offset = static_cast<std::size_t>(b * s.batch + h * s.head + t * s.sequence + d);
                    values[logical_index(heads, length, row_dim, b, h, t, d)] =
                        load_element(dtype, storage.data(), offset);
                }
    return values;
}

namespace {

double max_abs(const std::vector<float>& values) {
    double largest = 0.0;
    for (float value : values) largest = std::max(largest, static_cast<double>(std::fabs(value)));
    return largest;
}

}  // namespace

void store_element(DType dtype, unsigned char* storage, std::size_t index, float value) {
    if (dtype == DType::f32) {
        std::memcpy(storage + index * 4, &value, 4);
        return;
    }
    if (dtype == DType::e4m3) {
        storage[index] = to_e4m3_bits(value);
        return;
    }
    const std::uint16_t bits = dtype == DType::f16 ? to_f16_bits(value) : to_bf16_bits(value);
    std::memcpy(storage + index * 2, &bits, 2);
}

double load_element(DType dtype, const unsigned char* storage, std::size_t index) {
    if (dtype == DType::f32) {
        float value;
        std::memcpy(&value, storage + index * 4, 4);
        return value;
    }
    if (dtype == DType::e4m3) return from_e4m3_bits(storage[index]);
    std::uint16_t bits;
    std::memcpy(&bits, storage + index * 2, 2);
    return dtype == DType::f16 ? from_f16_bits(bits) : from_bf16_bits(bits);
}

double unit_roundoff(DType dtype) {
    switch (dtype) {
        case DType::f16:
            return std::ldexp(1.0, -11);
        case DType::bf16:
            return std::ldexp(1.0, -8);
        case DType::f32:
            return std::ldexp(1.0, -24);
        case DType::e4m3:
            return std::ldexp(1.0, -4);
    }
    return 0.0;
}

std::string CaseShape::describe() const {
    static constexpr const char* layouts[] = {"bhsd", "bshd", "padded"};
    return "B=" + std::to_string(batch) + " Hq=" + std::to_string(heads_q) + " Hkv=" + std::to_string(heads_kv) +
           " Lq=" + std::to_string(len_q) + " Lk=" + std::to_string(len_k) + " D=" + std::to_string(head_dim) +
           (head_dim_v ? " Dv=" + std::to_string(head_dim_v) : "") + " " + std::string(to_string(dtype)) +
           (o_dtype ? "->" + std::string(to_string(*o_dtype)) : "") +
           (q_descale.size() + k_descale.size() + v_descale.size() ? " descaled" : "") +
           " causal=" + std::string(to_string(causal)) + " " + layouts[static_cast<int>(layout)] +
           (with_lse ? " lse" : "") + describe_features(window, softcap, !sinks.empty());
}

CaseInputs random_inputs(const CaseShape& shape, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const auto draw = [&](int heads, int length, int row_dim) {
        std::vector<float> values(static_cast<std::size_t>(shape.batch) * heads * length * row_dim);
        for (auto& value : values) value = round_to(shape.dtype, uniform(generator));
        return values;
    };
    return {draw(shape.heads_q, shape.len_q, shape.head_dim), draw(shape.heads_kv, shape.len_k, shape.head_dim),
            draw(shape.heads_kv, shape.len_k, shape.value_dim())};
}

CaseInputs ramp_inputs(const CaseShape& shape, std::uint64_t seed) {
    CaseInputs inputs = random_inputs(shape, seed);
    // Score of key j along dimension 0 grows linearly to `rise` (natural-log units)
    // over the sequence; the random remainder keeps rows distinct.
    const double rise = 100.0;
    for (std::size_t i = 0; i < inputs.q.size(); i += shape.head_dim) inputs.q[i] = 1.0f;
    for (int b = 0; b < shape.batch; ++b)
        for (int h = 0; h < shape.heads_kv; ++h)
            for (int j = 0; j < shape.len_k; ++j) {
                const double score = rise * (j + 1) / shape.len_k;
                inputs.k[logical_index(shape.heads_kv, shape.len_k, shape.head_dim, b, h, j, 0)] =
                    round_to(shape.dtype, static_cast<float>(score / shape.scale));
            }
    return inputs;
}

CaseShape ramp_shape() {
    CaseShape shape;
    shape.len_q = 64;
    shape.len_k = 1024;
    shape.head_dim = 64;
    shape.dtype = DType::bf16;
    shape.causal = CausalMode::bottom_right;
    return shape;
}

std::pair<int, int> reference_visible_keys(const CaseShape& shape, int row, int len_q, int len_k) {
    // Key j is visible when no rule excludes it; the rules are half-planes in (row, j).
    const long long diagonal = shape.causal == CausalMode::top_left ? row : static_cast<long long>(len_k) - len_q + row;
    long long first = 0, last = len_k - 1;  // inclusive
    if (shape.causal != CausalMode::none) last = std::min(last, diagonal);
    if (shape.window) {
        if (shape.window->left >= 0) first = std::max(first, diagonal - shape.window->left);
        if (shape.window->right >= 0) last = std::min(last, diagonal + shape.window->right);
    }
    if (first > last) return {0, 0};
    return {static_cast<int>(first), static_cast<int>(last + 1)};
}

std::string describe_features(const std::optional<SlidingWindow>& window, float softcap, bool sinks) {
    char cap[32];
    std::snprintf(cap, sizeof cap, " softcap=%g", softcap);
    return (window ? " window=" + std::to_string(window->left) + "/" + std::to_string(window->right) : "") +
           (softcap > 0.0f ? cap : "") + (sinks ? " sinks" : "");
}

KernelSpec with_features(KernelSpec spec, const CaseShape& shape) {
    spec.window = shape.window.has_value();
    spec.softcap = shape.softcap > 0.0f;
    spec.sinks = !shape.sinks.empty();
    spec.head_dim_v = shape.head_dim_v;
    spec.out_dtype = shape.o_dtype;
    return spec;
}

Outputs reference_attention(const CaseShape& shape, const CaseInputs& inputs) {
    Outputs out;
    const int value_dim = shape.value_dim();
    out.o.assign(static_cast<std::size_t>(shape.batch) * shape.heads_q * shape.len_q * value_dim, 0.0);
    out.lse.assign(static_cast<std::size_t>(shape.batch) * shape.heads_q * shape.len_q, 0.0);
    const int group = shape.heads_q / shape.heads_kv;
    const int rows = shape.batch * shape.heads_q * shape.len_q;
    const auto work = [&](int first, int step) {
        std::vector<double> scores(static_cast<std::size_t>(shape.len_k));
        for (int r = first; r < rows; r += step) {
            const int i = r % shape.len_q, h = (r / shape.len_q) % shape.heads_q, b = r / (shape.len_q * shape.heads_q);
            const int kv = h / group;
            const auto [begin, end] = reference_visible_keys(shape, i, shape.len_q, shape.len_k);
            const std::size_t q_row = logical_index(shape.heads_q, shape.len_q, shape.head_dim, b, h, i, 0);
            const std::size_t out_row = logical_index(shape.heads_q, shape.len_q, value_dim, b, h, i, 0);
            // A sink is one more logit in the denominator, with no value row; -inf adds nothing.
            const bool sink = !shape.sinks.empty() && shape.sinks[static_cast<std::size_t>(h)] > -INFINITY;
            double largest = sink ? shape.sinks[static_cast<std::size_t>(h)] : -std::numeric_limits<double>::infinity();
            if (begin == end && !sink) {
                out.lse[static_cast<std::size_t>(r)] = -std::numeric_limits<double>::infinity();
                continue;
            }
            for (int j = begin; j < end; ++j) {
                const std::size_t key_row = logical_index(shape.heads_kv, shape.len_k, shape.head_dim, b, kv, j, 0);
                double dot = 0.0;
                for (int d = 0; d < shape.head_dim; ++d)
                    dot += static_cast<double>(inputs.q[q_row + d]) * inputs.k[key_row + d];
                scores[j] = dot * shape.scale * factor(shape.q_descale, kv) * factor(shape.k_descale, kv);
                if (shape.softcap > 0.0f) scores[j] = shape.softcap * std::tanh(scores[j] / shape.softcap);
                largest = std::max(largest, scores[j]);
            }
            double sum = sink ? std::exp(shape.sinks[static_cast<std::size_t>(h)] - largest) : 0.0;
            for (int j = begin; j < end; ++j) {
                const double weight = std::exp(scores[j] - largest);
                sum += weight;
                const std::size_t value_row = logical_index(shape.heads_kv, shape.len_k, value_dim, b, kv, j, 0);
                for (int d = 0; d < value_dim; ++d) out.o[out_row + d] += weight * inputs.v[value_row + d];
            }
            const double value_factor = factor(shape.v_descale, kv);
            for (int d = 0; d < value_dim; ++d) out.o[out_row + d] *= value_factor / sum;
            out.lse[static_cast<std::size_t>(r)] = largest + std::log(sum);
        }
    };
    const int threads = static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
    for (auto& thread : pool) thread.join();
    return out;
}

AttentionArgs case_arguments(const CaseShape& shape, const void* q, const void* k, const void* v, void* o) {
    const int value_dim = shape.value_dim();
    AttentionArgs args;
    args.q = q;
    args.k = k;
    args.v = v;
    args.o = o;
    args.dtype = shape.dtype;
    args.o_dtype = shape.o_dtype;
    args.batch = shape.batch;
    args.heads_q = shape.heads_q;
    args.heads_kv = shape.heads_kv;
    args.len_q = shape.len_q;
    args.len_k = shape.len_k;
    args.head_dim = shape.head_dim;
    args.head_dim_v = shape.head_dim_v;
    args.q_strides = strides_for(shape.layout, shape.heads_q, shape.len_q, shape.head_dim);
    args.o_strides = strides_for(shape.layout, shape.heads_q, shape.len_q, value_dim);
    args.k_strides = strides_for(shape.layout, shape.heads_kv, shape.len_k, shape.head_dim);
    args.v_strides = strides_for(shape.layout, shape.heads_kv, shape.len_k, value_dim);
    args.scale = shape.scale;
    args.causal = shape.causal;
    args.window = shape.window;
    args.softcap = shape.softcap;
    return args;
}

namespace {

// Device storage of a tensor in the shape's layout, of elements of dtype.
DeviceBuffer device_storage(const CaseShape& shape, DType dtype, int heads, int length, int row_dim) {
    return device_buffer(storage_elements(shape, heads, length, row_dim) *
                         static_cast<std::size_t>(element_bytes(dtype)));
}

}  // namespace

DeviceTensors::DeviceTensors(const CaseShape& shape, const CaseInputs& inputs)
    : q(device_storage(shape, shape.dtype, shape.heads_q, shape.len_q, shape.head_dim)),
      k(device_storage(shape, shape.dtype, shape.heads_kv, shape.len_k, shape.head_dim)),
      v(device_storage(shape, shape.dtype, shape.heads_kv, shape.len_k, shape.value_dim())),
      o(device_storage(shape, shape.output_dtype(), shape.heads_q, shape.len_q, shape.value_dim())) {
    q.upload(pack(shape, inputs.q, shape.heads_q, shape.len_q, shape.head_dim));
    k.upload(pack(shape, inputs.k, shape.heads_kv, shape.len_k, shape.head_dim));
    v.upload(pack(shape, inputs.v, shape.heads_kv, shape.len_k, shape.value_dim()));
    o.fill(0xff);
}

std::vector<double> output_of(const CaseShape& shape, const DeviceBuffer& o) {
    return unpack(shape, shape.output_dtype(), o.download<unsigned char>(), shape.heads_q, shape.len_q,
                  shape.value_dim());
}

DeviceRun run_on_device(Runtime& runtime, const KernelSpec& spec, const CaseShape& shape, const CaseInputs& inputs,
                        bool count) {
    const std::size_t lse_count = static_cast<std::size_t>(shape.batch) * shape.heads_q * shape.len_q;
    DeviceTensors tensors(shape, inputs);
    DeviceBuffer lse_device = device_buffer(lse_count * sizeof(float)),
                 counters_device = device_buffer(2 * sizeof(unsigned long long));
    lse_device.fill(0xff);  // NaN, as o
    counters_device.fill(0);

    AttentionArgs args = case_arguments(shape, tensors.q.get(), tensors.k.get(), tensors.v.get(), tensors.o.get());
    args.lse = shape.with_lse ? static_cast<float*>(lse_device.get()) : nullptr;
    if (shape.with_lse) args.lse_shape = {shape.batch, shape.heads_q, shape.len_q};
    args.debug_counters = count ? static_cast<unsigned long long*>(counters_device.get()) : nullptr;
    DeviceBuffer sinks_device = device_buffer(std::max<std::size_t>(1, shape.sinks.size()) * sizeof(float));
    if (!shape.sinks.empty()) {
        sinks_device.upload(shape.sinks);
        args.sinks = static_cast<const float*>(sinks_device.get());
    }
    // Descale factors, each in a buffer of its own (left null when none).
    const auto factor_bytes = [](const std::vector<float>& factors) {
        return std::max<std::size_t>(1, factors.size()) * sizeof(float);
    };
    DeviceBuffer q_descale = device_buffer(factor_bytes(shape.q_descale)),
                 k_descale = device_buffer(factor_bytes(shape.k_descale)),
                 v_descale = device_buffer(factor_bytes(shape.v_descale));
    const auto factors_of = [](const std::vector<float>& factors, DeviceBuffer& buffer) -> const float* {
        if (factors.empty()) return nullptr;
        buffer.upload(factors);
        return static_cast<const float*>(buffer.get());
    };
    args.descale.q = factors_of(shape.q_descale, q_descale);
    args.descale.k = factors_of(shape.k_descale, k_descale);
    args.descale.v = factors_of(shape.v_descale, v_descale);
    args.descale.heads =
        static_cast<int>(std::max({shape.q_descale.size(), shape.k_descale.size(), shape.v_descale.size()}));
    runtime.run(spec, args, nullptr);
    synchronize_test_device();

    DeviceRun run;
    run.outputs.o = output_of(shape, tensors.o);
    if (shape.with_lse)
        for (float value : lse_device.download<float>()) run.outputs.lse.push_back(value);
    const auto counters = counters_device.download<unsigned long long>();
    run.counters[0] = counters[0];
    run.counters[1] = counters[1];
    return run;
}

// Derivation. Inputs are exactly representable in the element type and the reference
// uses those same values in f64, so input rounding cancels. What remains:
//  - the output is rounded once to its element type: at most u * |o|, and |o| <= max|v|
//    (times v's descale factor) because every output row is a convex combination of value rows;
//  - f32 arithmetic: a score accumulates head_dim products (relative error about
//    head_dim * u32), exp2f and the running sums add a few u32 each; the error of a
//    convex combination is bounded by max|v| times the relative error of its weights;
//  - extra_relative: families that round the probabilities to the element type before
//    the P.V product pass u of their type here.
double output_tolerance(const CaseShape& shape, const CaseInputs& inputs, double extra_relative) {
    const double u32 = std::ldexp(1.0, -24);
    const double arithmetic = u32 * (8.0 * shape.head_dim + 64.0);
    // A capped score moves by up to softcap_score_error: each weight by a factor within
    // e^(+-error), so the normalized ones by e^(+-2 error).
    const double capped = std::expm1(2.0 * softcap_score_error(shape));
    double value_factor = 1.0;
    for (float f : shape.v_descale) value_factor = std::max(value_factor, static_cast<double>(std::fabs(f)));
    return max_abs(inputs.v) * value_factor *
               (unit_roundoff(shape.output_dtype()) + arithmetic + extra_relative + capped) +
           1e-7;
}

double softcap_score_error(const CaseShape& shape) {
    // NVIDIA's tanh.approx: relative error at most 2^-10.987 of tanh, whose magnitude is at
    // most 1 (kernel_templates/prelude_common.h); the AMD formula is far inside this.
    return shape.softcap > 0.0f ? shape.softcap * std::exp2(-10.987) : 0.0;
}

Comparison compare(const CaseShape& shape, const Outputs& got, const Outputs& want, double tolerance,
                   double score_error) {
    Comparison result;
    const auto flag = [&](const std::string& what) {
        if (result.bad_elements++ == 0) result.first_bad = what;
    };
    for (std::size_t i = 0; i < want.o.size(); ++i) {
        const double error = std::fabs(got.o[i] - want.o[i]);
        if (std::isnan(got.o[i]) || !(error <= tolerance))
            flag("o[" + std::to_string(i) + "] = " + std::to_string(got.o[i]) + ", want " + std::to_string(want.o[i]));
        if (!std::isnan(error)) result.max_error = std::max(result.max_error, error);
    }
    if (!shape.with_lse) return result;
    for (std::size_t i = 0; i < want.lse.size(); ++i) {
        const double expected = want.lse[i];
        if (std::isinf(expected)) {
            if (!(std::isinf(got.lse[i]) && got.lse[i] < 0)) flag("lse[" + std::to_string(i) + "] should be -inf");
            continue;
        }
        // The LSE is computed from f32 scores and sums: relative error about the
        // arithmetic term above, on a value of magnitude 1 + |lse|.
        const double error = std::fabs(got.lse[i] - expected);
        if (std::isnan(got.lse[i]) ||
            !(error <= 1e-4 * (1.0 + std::fabs(expected)) + softcap_score_error(shape) + score_error))
            flag("lse[" + std::to_string(i) + "] = " + std::to_string(got.lse[i]) + ", want " +
                 std::to_string(expected));
        if (!std::isnan(error)) result.max_lse_error = std::max(result.max_lse_error, error);
    }
    return result;
}

}  // namespace fajit::testing
