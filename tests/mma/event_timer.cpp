#include "mma/event_timer.hpp"

#include <dlfcn.h>

#include <stdexcept>

#include "support/gpu_memory.hpp"

namespace fajit::testing {
namespace {

// Declared by hand, as in gpu_memory.cpp, so the benchmark needs no CUDA headers.
using CuResult = int;
struct EventApi {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CuResult (*create)(void**, unsigned) = nullptr;
    CuResult (*destroy)(void*) = nullptr;
    CuResult (*record)(void*, void*) = nullptr;
    CuResult (*synchronize)(void*) = nullptr;
    CuResult (*elapsed)(float*, void*, void*) = nullptr;

    template <class F>
    void bind(F& out, const char* name) {
        out = library ? reinterpret_cast<F>(dlsym(library, name)) : nullptr;
        if (!out) throw std::runtime_error(std::string("CUDA driver entry point ") + name + " not found");
    }

    EventApi() {
        bind(create, "cuEventCreate");
        bind(destroy, "cuEventDestroy_v2");
        bind(record, "cuEventRecord");
        bind(synchronize, "cuEventSynchronize");
        bind(elapsed, "cuEventElapsedTime");
    }
};

const EventApi& api() {
    static const EventApi instance;
    return instance;
}

void check(CuResult status, const char* what) {
    if (status != 0) throw std::runtime_error(std::string(what) + " failed with CUDA error " + std::to_string(status));
}

}  // namespace

EventTimer::EventTimer() {
    CudaTestDevice::instance();  // makes the device's context current
    check(api().create(&start_, 0), "cuEventCreate");
    check(api().create(&stop_, 0), "cuEventCreate");
}

EventTimer::~EventTimer() {
    api().destroy(start_);
    api().destroy(stop_);
}

void EventTimer::start() { check(api().record(start_, nullptr), "cuEventRecord"); }

float EventTimer::stop() {
    check(api().record(stop_, nullptr), "cuEventRecord");
    check(api().synchronize(stop_), "cuEventSynchronize");
    float milliseconds = 0.0f;
    check(api().elapsed(&milliseconds, start_, stop_), "cuEventElapsedTime");
    return milliseconds;
}

}  // namespace fajit::testing
