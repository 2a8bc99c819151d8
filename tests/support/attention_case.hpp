#pragma once
// One attention problem for GPU tests: inputs drawn at random (or shaped), an f64 CPU
// reference, a run through the library, and the comparison, with tolerances derived
// from the element type.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_buffer.hpp"
#include "fajit/runtime.hpp"

namespace fajit::testing {

enum class Layout { bhsd, bshd, padded };  // padded: BHSD with 8 unused elements per row

struct CaseShape {
    int batch = 1;
    int heads_q = 1;
    int heads_kv = 1;
    int len_q = 1;
    int len_k = 1;
    int head_dim = 64;
    int head_dim_v = 0;  // of V and O where it differs from head_dim, else 0
    DType dtype = DType::f16;
    CausalMode causal = CausalMode::none;
    float scale = 0.125f;
    Layout layout = Layout::bhsd;
    bool with_lse = true;
    // Model features, passed to the call as AttentionArgs holds them.
    std::optional<SlidingWindow> window;
    float softcap = 0.0f;
    std::vector<float> sinks;  // [heads_q] logits; empty: none
    // e4m3 inputs: o's dtype, and the descale factors (AttentionArgs::descale), each
    // empty (none), one factor or one per KV head.
    std::optional<DType> o_dtype;
    std::vector<float> q_descale, k_descale, v_descale;

    std::string describe() const;
    int value_dim() const { return head_dim_v ? head_dim_v : head_dim; }
    DType output_dtype() const { return o_dtype.value_or(dtype); }
};

// Logical [batch, heads, length, head_dim] values (v: value_dim), each exactly representable in dtype.
struct CaseInputs {
    std::vector<float> q, k, v;
};

CaseInputs random_inputs(const CaseShape&, std::uint64_t seed);
// Scores that climb steadily along the keys, so a row's maximum keeps rising past
// any margin mid-sequence and the deferred-rescale branch is exercised both ways.
CaseInputs ramp_inputs(const CaseShape&, std::uint64_t seed);
// The shape the ramp tests share: 64 bf16 query rows, bottom-right, against 1024 keys,
// so the ramp rises about 6 units per 64-key step.
CaseShape ramp_shape();

struct Outputs {
    std::vector<double> o;    // logical [batch, heads_q, len_q, value_dim]
    std::vector<double> lse;  // [batch, heads_q, len_q]
};

Outputs reference_attention(const CaseShape&, const CaseInputs&);

// The keys [begin, end) query row `row` sees under the shape's causal mask and window,
// written from the definition in fajit/attention.hpp rather than from the kernels.
std::pair<int, int> reference_visible_keys(const CaseShape&, int row, int len_q, int len_k);

// " window=L/R softcap=C sinks" for the features that are on.
std::string describe_features(const std::optional<SlidingWindow>& window, float softcap, bool sinks);

// The spec fields a shape's features, V head dim and output dtype need (KernelSpec::window,
// softcap, sinks, head_dim_v, out_dtype).
KernelSpec with_features(KernelSpec, const CaseShape&);

struct DeviceRun {
    Outputs outputs;
    unsigned long long counters[2] = {0, 0};  // frame moves, frames kept (debug-counter builds)
};

// Logical [batch, heads, length, row_dim] values stored in the shape's layout, encoded as its
// inputs' element type (row_dim: head_dim for q and k, value_dim for v and o); and storage
// of that layout, of elements of dtype, read back as logical values.
std::vector<unsigned char> pack(const CaseShape&, const std::vector<float>& values, int heads, int length,
                                int row_dim);
std::vector<double> unpack(const CaseShape&, DType dtype, const std::vector<unsigned char>& storage, int heads,
                           int length, int row_dim);

// A call over device tensors q, k, v and o stored in the shape's layout: its sizes, dtypes,
// strides, scale, causal mode, window and soft-cap (run_on_device adds the LSE, sinks,
// descale factors and counters).
AttentionArgs case_arguments(const CaseShape&, const void* q, const void* k, const void* v, void* o);

// A case's q, k and v on the device in the shape's layout, and its o (of the output dtype
// and value dim) filled with 0xff bytes, NaN in every element type, so an element no kernel
// writes stays NaN; output_of reads such an o back as logical values.
struct DeviceTensors {
    DeviceTensors(const CaseShape&, const CaseInputs&);
    DeviceBuffer q, k, v, o;
};
std::vector<double> output_of(const CaseShape&, const DeviceBuffer& o);

// Poisons the outputs, runs spec through runtime and reads everything back.
DeviceRun run_on_device(Runtime&, const KernelSpec&, const CaseShape&, const CaseInputs&, bool count = false);

// Element storage of a dtype (fajit::element_bytes bytes each): element `index` written or read.
void store_element(DType, unsigned char* storage, std::size_t index, float value);
double load_element(DType, const unsigned char* storage, std::size_t index);

// Unit roundoff: the largest relative error of rounding to the type.
double unit_roundoff(DType);

// Largest |output - reference| the element type allows; see the derivation in the .cpp.
double output_tolerance(const CaseShape&, const CaseInputs&, double extra_relative = 0.0);

// How far a kernel's soft-capped score may be from the exact one (natural-log units).
double softcap_score_error(const CaseShape&);

struct Comparison {
    double max_error = 0.0;
    double max_lse_error = 0.0;
    std::size_t bad_elements = 0;  // beyond tolerance, NaN or never written
    std::string first_bad;
};
// score_error: how far a kernel's scores may be from exact beyond f32 arithmetic (natural-log
// units; soft-caps add theirs), which the LSE check allows for.
Comparison compare(const CaseShape&, const Outputs& got, const Outputs& want, double tolerance,
                   double score_error = 0.0);

}  // namespace fajit::testing
