// A call from a thread that has never used the device, of a kernel another thread loaded:
// engines call from worker threads, which on CUDA have no current context. Checked against
// the f64 reference. Skips, saying why, where no device is present.
#include <doctest/doctest.h>

#include <cmath>
#include <exception>
#include <string>
#include <thread>

#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/test_device.hpp"

using namespace fajit;
using namespace fajit::testing;

TEST_CASE("a call from a fresh thread runs the kernel another thread loaded") {
    if (skip_without_device()) return;
    CaseShape shape;
    shape.heads_q = 8;
    shape.heads_kv = 2;
    shape.len_q = 64;
    shape.len_k = 512;
    shape.head_dim = 128;
    shape.causal = CausalMode::bottom_right;
    shape.scale = 1.0f / std::sqrt(128.0f);
    shape.with_lse = false;
    CAPTURE(shape.describe());
    const CaseInputs inputs = random_inputs(shape, 5);
    const auto q_storage = pack(shape, inputs.q, shape.heads_q, shape.len_q, shape.head_dim);
    const auto k_storage = pack(shape, inputs.k, shape.heads_kv, shape.len_k, shape.head_dim);
    const auto v_storage = pack(shape, inputs.v, shape.heads_kv, shape.len_k, shape.head_dim);
    DeviceBuffer q = device_buffer(q_storage.size()), k = device_buffer(k_storage.size()),
                 v = device_buffer(v_storage.size()), o = device_buffer(q_storage.size());
    q.upload(q_storage);
    k.upload(k_storage);
    v.upload(v_storage);
    Runtime& runtime = gpu_test_runtime();
    const AttentionArgs args = case_arguments(shape, q.get(), k.get(), v.get(), o.get());
    runtime.attention(args, nullptr);  // this thread selects, compiles and loads the kernel
    synchronize_test_device();
    o.fill(0xff);  // NaN in every element type: the worker's call must overwrite all of it
    synchronize_test_device();

    std::string error;
    std::thread worker([&] {
        try {
            runtime.attention(args, nullptr);
        } catch (const std::exception& failure) {
            error = failure.what();
        }
    });
    worker.join();
    REQUIRE_MESSAGE(error.empty(), error);
    synchronize_test_device();
    Outputs got;
    got.o = unpack(shape, shape.dtype, o.download<unsigned char>(), shape.heads_q, shape.len_q, shape.head_dim);
    const Comparison result = compare(shape, got, reference_attention(shape, inputs),
                                      output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
    CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
}
