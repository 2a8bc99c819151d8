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
    DeviceTensors tensors(shape, inputs);
    Runtime& runtime = gpu_test_runtime();
    const AttentionArgs args =
        case_arguments(shape, tensors.q.get(), tensors.k.get(), tensors.v.get(), tensors.o.get());
    runtime.attention(args, nullptr);  // this thread selects, compiles and loads the kernel
    synchronize_test_device();
    tensors.o.fill(0xff);  // NaN again: the worker's call must overwrite all of it
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
    got.o = output_of(shape, tensors.o);
    const Comparison result = compare(shape, got, reference_attention(shape, inputs),
                                      output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
    CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
}
