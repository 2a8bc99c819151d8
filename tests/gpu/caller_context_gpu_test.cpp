// A call leaves the calling thread's current CUDA context as it found it: none on an
// engine's worker thread, or a context of the engine's own. The library makes its device's
// primary context current for its work; later calls of the caller must not land there.
// Reads the current context through the driver API itself, so it runs on CUDA only; skips,
// saying why, elsewhere.
#include <cuda.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>

#include "backend/dynamic_library.hpp"
#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/test_device.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

// The driver calls the test makes itself. cuCtxCreate_v2 is bound by name: cuda.h 13 maps
// cuCtxCreate to a later signature, and every driver keeps this one.
struct ContextCalls {
    DynamicLibrary library{{"libcuda.so.1"}};
    decltype(&cuCtxGetCurrent) get_current = nullptr;
    decltype(&cuCtxSetCurrent) set_current = nullptr;
    decltype(&cuDeviceGet) device_get = nullptr;
    CUresult (*create)(CUcontext*, unsigned, CUdevice) = nullptr;
    decltype(&cuCtxDestroy) destroy = nullptr;

    ContextCalls() {
        const bool bound = library.bind(get_current, "cuCtxGetCurrent") &&
                           library.bind(set_current, "cuCtxSetCurrent") && library.bind(device_get, "cuDeviceGet") &&
                           library.bind(create, "cuCtxCreate_v2") && library.bind(destroy, "cuCtxDestroy_v2");
        REQUIRE_MESSAGE(bound, "libcuda.so.1 lacks a context call");
    }
    // The thread's current context; a failed query reads as a context no check expects.
    CUcontext current() const {
        CUcontext context = nullptr;
        return get_current(&context) == CUDA_SUCCESS ? context : unreadable();
    }
    static CUcontext unreadable() { return reinterpret_cast<CUcontext>(std::uintptr_t{1}); }
};

CaseShape small_case() {
    CaseShape shape;
    shape.heads_q = 4;
    shape.heads_kv = 2;
    shape.len_q = 32;
    shape.len_k = 256;
    shape.head_dim = 64;
    shape.causal = CausalMode::bottom_right;
    shape.scale = 1.0f / std::sqrt(64.0f);
    shape.with_lse = false;
    return shape;
}

bool skip_without_cuda() {
    if (skip_without_device()) return true;
    if (test_backend().name() == "cuda") return false;
    MESSAGE("skipped: the device's backend is ", test_backend().name(), ", and this suite checks CUDA contexts");
    return true;
}

}  // namespace

TEST_CASE("a call from a thread with no current context leaves it with none") {
    if (skip_without_cuda()) return;
    const ContextCalls cuda;
    const CaseShape shape = small_case();
    const CaseInputs inputs = random_inputs(shape, 11);
    DeviceTensors tensors(shape, inputs);
    const AttentionArgs args =
        case_arguments(shape, tensors.q.get(), tensors.k.get(), tensors.v.get(), tensors.o.get());

    CUcontext after = ContextCalls::unreadable();
    std::string error;
    std::thread worker([&] {
        try {
            gpu_test_runtime().attention(args, nullptr);
            after = cuda.current();
        } catch (const std::exception& failure) {
            error = failure.what();
        }
    });
    worker.join();
    REQUIRE_MESSAGE(error.empty(), error);
    CHECK(after == nullptr);
    synchronize_test_device();
    Outputs got;
    got.o = output_of(shape, tensors.o);
    const Comparison result = compare(shape, got, reference_attention(shape, inputs),
                                      output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
    CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
}

TEST_CASE("a call from a thread with a context of its own leaves that one current") {
    if (skip_without_cuda()) return;
    const ContextCalls cuda;
    const CaseShape shape = small_case();
    const CaseInputs inputs = random_inputs(shape, 12);
    DeviceTensors tensors(shape, inputs);  // in the primary context, where the library works
    const AttentionArgs args =
        case_arguments(shape, tensors.q.get(), tensors.k.get(), tensors.v.get(), tensors.o.get());

    std::string error;
    bool kept = false;
    std::thread engine([&] {
        CUdevice device;
        CUcontext own = nullptr;
        if (cuda.device_get(&device, test_device) != CUDA_SUCCESS || cuda.create(&own, 0, device) != CUDA_SUCCESS) {
            error = "could not create a context";
            return;
        }
        try {
            gpu_test_runtime().attention(args, nullptr);
            synchronize_test_device();
            kept = cuda.current() == own;
        } catch (const std::exception& failure) {
            error = failure.what();
        }
        (void)cuda.destroy(own);
    });
    engine.join();
    REQUIRE_MESSAGE(error.empty(), error);
    CHECK(kept);
}
