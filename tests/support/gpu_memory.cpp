#include "support/gpu_memory.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace fajit::testing {
namespace {

// The few driver entry points tests need, declared by hand so tests need no CUDA headers.
using CuResult = int;
using CuDevicePtr = unsigned long long;
struct Driver {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CuResult (*init)(unsigned) = nullptr;
    CuResult (*device_count)(int*) = nullptr;
    CuResult (*device_get)(int*, int) = nullptr;
    CuResult (*retain_primary)(void**, int) = nullptr;
    CuResult (*set_current)(void*) = nullptr;
    CuResult (*alloc)(CuDevicePtr*, std::size_t) = nullptr;
    CuResult (*release)(CuDevicePtr) = nullptr;
    CuResult (*to_device)(CuDevicePtr, const void*, std::size_t) = nullptr;
    CuResult (*to_host)(void*, CuDevicePtr, std::size_t) = nullptr;
    CuResult (*memset)(CuDevicePtr, unsigned char, std::size_t) = nullptr;
    CuResult (*synchronize)() = nullptr;
    std::string error;

    template <class F>
    bool bind(F& out, const char* name) {
        out = reinterpret_cast<F>(dlsym(library, name));
        return out != nullptr;
    }

    Driver() {
        if (!library) {
            error = "no CUDA driver (libcuda.so.1 not found)";
            return;
        }
        if (!(bind(init, "cuInit") && bind(device_count, "cuDeviceGetCount") && bind(device_get, "cuDeviceGet") &&
              bind(retain_primary, "cuDevicePrimaryCtxRetain") && bind(set_current, "cuCtxSetCurrent") &&
              bind(alloc, "cuMemAlloc_v2") && bind(release, "cuMemFree_v2") && bind(to_device, "cuMemcpyHtoD_v2") &&
              bind(to_host, "cuMemcpyDtoH_v2") && bind(memset, "cuMemsetD8_v2") &&
              bind(synchronize, "cuCtxSynchronize"))) {
            error = "the CUDA driver lacks an expected symbol";
            return;
        }
        int count = 0;
        if (init(0) != 0 || device_count(&count) != 0 || count == 0) error = "the CUDA driver sees no device";
    }
};

Driver& driver() {
    static Driver instance;
    return instance;
}

void check(CuResult status, const char* what) {
    if (status != 0) throw std::runtime_error(std::string(what) + " failed with CUDA error " + std::to_string(status));
}

}  // namespace

std::string CudaTestDevice::unavailable_reason() { return driver().error; }

CudaTestDevice& CudaTestDevice::instance() {
    static CudaTestDevice device;
    return device;
}

CudaTestDevice::CudaTestDevice() {
    Driver& api = driver();
    if (!api.error.empty()) throw std::runtime_error(api.error);
    int device = 0;
    void* context = nullptr;
    check(api.device_get(&device, 0), "cuDeviceGet");
    check(api.retain_primary(&context, device), "cuDevicePrimaryCtxRetain");
    check(api.set_current(context), "cuCtxSetCurrent");
}

void* CudaTestDevice::allocate(std::size_t bytes) {
    CuDevicePtr pointer = 0;
    check(driver().alloc(&pointer, bytes ? bytes : 1), "cuMemAlloc");
    return reinterpret_cast<void*>(pointer);
}

void CudaTestDevice::free(void* pointer) { driver().release(reinterpret_cast<CuDevicePtr>(pointer)); }

void CudaTestDevice::upload(void* device, const void* host, std::size_t bytes) {
    check(driver().to_device(reinterpret_cast<CuDevicePtr>(device), host, bytes), "cuMemcpyHtoD");
}

void CudaTestDevice::download(void* host, const void* device, std::size_t bytes) {
    check(driver().to_host(host, reinterpret_cast<CuDevicePtr>(device), bytes), "cuMemcpyDtoH");
}

void CudaTestDevice::fill(void* device, unsigned char byte, std::size_t bytes) {
    check(driver().memset(reinterpret_cast<CuDevicePtr>(device), byte, bytes), "cuMemsetD8");
}

void CudaTestDevice::synchronize() { check(driver().synchronize(), "cuCtxSynchronize (a kernel failed)"); }

DeviceBuffer::DeviceBuffer(std::size_t bytes) : pointer_(CudaTestDevice::instance().allocate(bytes)), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() { CudaTestDevice::instance().free(pointer_); }

}  // namespace fajit::testing
