// Back-to-back calls on one stream, the second reading what the first wrote, with no
// synchronization between them. With programmatic launches (sm_90 and later, on by
// default: Options::programmatic_launch) the second kernel may be placed while the first
// still runs, so this shows that each kernel waits for the one before it: a kernel that
// read early would see the first output's NaN poison. The dispatcher's families for a
// prefill chunk and for decode (whose split-KV calls also share a workspace), each
// checked against the f64 reference of what the first call actually wrote. Skips, saying
// why, where no device is present.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/test_device.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

// Runs O1 = attention(Q, K, V) and then O2 = attention(O1, K, V) back to back.
void check_chain(const CaseShape& shape) {
    CAPTURE(shape.describe());
    const CaseInputs first = random_inputs(shape, 11);
    // O is stored as Q is (the shapes here have no V head dim of their own), so O1 can be a Q.
    const DeviceTensors tensors(shape, first);
    DeviceBuffer o2 = device_buffer(tensors.o.size());
    o2.fill(0xff);  // NaN in every element type, as DeviceTensors leaves O1
    Runtime& runtime = gpu_test_runtime();
    const DeviceBuffer &k = tensors.k, &v = tensors.v, &o1 = tensors.o;
    runtime.attention(case_arguments(shape, tensors.q.get(), k.get(), v.get(), o1.get()), nullptr);
    runtime.attention(case_arguments(shape, o1.get(), k.get(), v.get(), o2.get()), nullptr);
    synchronize_test_device();

    const auto outputs_of = [&](const DeviceBuffer& o) {
        Outputs got;
        got.o = output_of(shape, o);
        return got;
    };
    const Outputs written = outputs_of(o1);
    CaseInputs second = first;
    second.q.assign(written.o.begin(), written.o.end());
    const double rounding = unit_roundoff(shape.dtype);  // P rounded before P V, as every tensor-core family does
    const Comparison one = compare(shape, written, reference_attention(shape, first),
                                   output_tolerance(shape, first, rounding));
    CHECK_MESSAGE(one.bad_elements == 0, "first call: " << one.first_bad);
    const Comparison two = compare(shape, outputs_of(o2), reference_attention(shape, second),
                                   output_tolerance(shape, second, rounding));
    CHECK_MESSAGE(two.bad_elements == 0, "second call, reading the first's output: " << two.first_bad);
}

}  // namespace

TEST_CASE("a call reading the output of the call before it on the stream sees all of it") {
    if (skip_without_device()) return;
    CaseShape prefill;
    prefill.heads_q = 8;
    prefill.heads_kv = 2;
    prefill.len_q = 256;
    prefill.len_k = 4096;
    prefill.head_dim = 128;
    prefill.causal = CausalMode::bottom_right;
    prefill.scale = 1.0f / std::sqrt(128.0f);
    prefill.with_lse = false;
    check_chain(prefill);

    CaseShape decode = prefill;
    decode.batch = 4;
    decode.heads_q = 32;
    decode.heads_kv = 8;
    decode.len_q = 1;
    decode.dtype = DType::bf16;
    check_chain(decode);
}
