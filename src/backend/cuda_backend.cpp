// NVIDIA backend: NVRTC compiles, the CUDA driver API loads and launches. Both
// libraries are opened at run time; their headers are used for types only.
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backend/cuda_backend.hpp"
#include "backend/dynamic_library.hpp"
#include "backend/runtime_compiler.hpp"

namespace fajit {
namespace {

struct Nvrtc {
    using program_type = nvrtcProgram;
    using result_type = nvrtcResult;
    static constexpr nvrtcResult success = NVRTC_SUCCESS;
    static constexpr nvrtcResult compilation_error = NVRTC_ERROR_COMPILATION;
    static constexpr const char* prefix = "nvrtc";
    static constexpr const char* destroy_call = "nvrtcDestroyProgram";

    DynamicLibrary library{{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", FAJIT_CUDA_LIBRARY_DIR "/libnvrtc.so"}};
    decltype(&nvrtcVersion) version = nullptr;
    decltype(&nvrtcCreateProgram) create = nullptr;
    decltype(&nvrtcDestroyProgram) destroy = nullptr;
    decltype(&nvrtcCompileProgram) compile = nullptr;
    decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
    decltype(&nvrtcGetProgramLog) log = nullptr;
    decltype(&nvrtcGetCUBINSize) code_size = nullptr;  // the cubin's
    decltype(&nvrtcGetCUBIN) code = nullptr;
    decltype(&nvrtcAddNameExpression) add_name = nullptr;
    decltype(&nvrtcGetLoweredName) lowered_name = nullptr;
    decltype(&nvrtcGetErrorString) error_string = nullptr;
    // NVRTC 12.9 and later keep a cache of their own results, in the driver's compute cache
    // that every process of the user shares, and a result from it comes without the compiler's
    // log: ptxas's register and spill report goes missing. fa-jit caches kernels itself, with
    // their logs, so that cache is switched off (--no-cache, which older NVRTC rejects).
    bool has_result_cache = false;
    std::string error;

    Nvrtc() {
        if (!library.loaded()) {
            error = "NVRTC not found (" + library.error() + ")";
            return;
        }
        const bool bound =
            library.bind(version, "nvrtcVersion") && library.bind(create, "nvrtcCreateProgram") &&
            library.bind(destroy, "nvrtcDestroyProgram") && library.bind(compile, "nvrtcCompileProgram") &&
            library.bind(log_size, "nvrtcGetProgramLogSize") && library.bind(log, "nvrtcGetProgramLog") &&
            library.bind(code_size, "nvrtcGetCUBINSize") && library.bind(code, "nvrtcGetCUBIN") &&
            library.bind(add_name, "nvrtcAddNameExpression") && library.bind(lowered_name, "nvrtcGetLoweredName") &&
            library.bind(error_string, "nvrtcGetErrorString");
        if (!bound) {
            error = "NVRTC at " + library.path() + " lacks an expected symbol";
            return;
        }
        int major = 0, minor = 0;
        version(&major, &minor);
        has_result_cache = major > 12 || (major == 12 && minor >= 9);
        preload_builtins();
    }

    // Hashing the library (~100 MB) keeps a rebuilt NVRTC of the same version from
    // serving stale cache entries. It is done once, on first use: listing devices or
    // asking whether NVRTC is there needs no cache key.
    const std::string& identity() const {
        std::call_once(identity_once, [this] {
            if (!error.empty()) return;
            int major = 0, minor = 0;
            version(&major, &minor);
            identity_text =
                "nvrtc " + std::to_string(major) + "." + std::to_string(minor) + " " + file_fingerprint(library.path());
        });
        return identity_text;
    }

    // NVRTC opens its builtins library by soname at compile time. When NVRTC itself was
    // found only through the toolkit directory, the loader would not find the builtins
    // there, so they are opened here by path first.
    void preload_builtins() {
        const auto directory = std::filesystem::path(library.path()).parent_path();
        std::error_code ignored;
        for (const auto& file : std::filesystem::directory_iterator(directory, ignored)) {
            const auto name = file.path().filename().string();
            if (name.starts_with("libnvrtc-builtins.so.") && name.find(".alt") == std::string::npos &&
                std::count(name.begin(), name.end(), '.') == 3)
                builtins.emplace_back(std::make_unique<DynamicLibrary>(std::vector<std::string>{file.path().string()}));
        }
    }
    std::vector<std::unique_ptr<DynamicLibrary>> builtins;

private:
    mutable std::once_flag identity_once;
    mutable std::string identity_text = "nvrtc-unavailable";
};

struct Driver {
    DynamicLibrary library{{"libcuda.so.1", "libcuda.so"}};
    decltype(&cuInit) init = nullptr;
    decltype(&cuDeviceGetCount) device_count = nullptr;
    decltype(&cuDeviceGet) device_get = nullptr;
    decltype(&cuDeviceGetAttribute) attribute = nullptr;
    decltype(&cuDeviceGetName) device_name = nullptr;
    decltype(&cuDevicePrimaryCtxRetain) retain_primary = nullptr;
    decltype(&cuCtxSetCurrent) set_current = nullptr;
    decltype(&cuCtxGetCurrent) get_current = nullptr;
    decltype(&cuModuleLoadData) module_load = nullptr;
    decltype(&cuModuleUnload) module_unload = nullptr;
    decltype(&cuModuleGetFunction) module_function = nullptr;
    decltype(&cuFuncSetAttribute) function_attribute = nullptr;
    decltype(&cuFuncGetAttribute) function_get_attribute = nullptr;
    decltype(&cuLaunchKernel) launch = nullptr;
    // Drivers before CUDA 12 lack these two; launches are then ordinary ones
    // (LaunchShape::programmatic), and none is a cluster (LoadedKernel::clusters_held).
    decltype(&cuLaunchKernelEx) launch_with_attributes = nullptr;
    decltype(&cuOccupancyMaxActiveClusters) max_active_clusters = nullptr;
    decltype(&cuGetErrorString) error_string = nullptr;
    decltype(&cuMemAlloc) memory_allocate = nullptr;
    decltype(&cuMemFree) memory_free = nullptr;
    decltype(&cuMemcpyHtoD) copy_to_device = nullptr;
    decltype(&cuMemcpyDtoHAsync) copy_to_host = nullptr;
    decltype(&cuStreamSynchronize) stream_synchronize = nullptr;
    decltype(&cuMemsetD8) memset = nullptr;
    decltype(&cuEventCreate) event_create = nullptr;
    decltype(&cuEventDestroy) event_destroy = nullptr;
    decltype(&cuEventRecord) event_record = nullptr;
    decltype(&cuEventSynchronize) event_synchronize = nullptr;
    decltype(&cuEventElapsedTime) event_elapsed = nullptr;
    decltype(&cuCtxSynchronize) synchronize = nullptr;
    // Drivers before CUDA 12 lack it; tensor maps are then refused, and nothing else.
    decltype(&cuTensorMapEncodeTiled) encode_tiled = nullptr;
    std::string error;

    Driver() {
        if (!library.loaded()) {
            error = "CUDA driver not found (" + library.error() + ")";
            return;
        }
        const bool bound =
            library.bind(init, "cuInit") && library.bind(device_count, "cuDeviceGetCount") &&
            library.bind(device_get, "cuDeviceGet") && library.bind(attribute, "cuDeviceGetAttribute") &&
            library.bind(device_name, "cuDeviceGetName") && library.bind(retain_primary, "cuDevicePrimaryCtxRetain") &&
            library.bind(set_current, "cuCtxSetCurrent") && library.bind(get_current, "cuCtxGetCurrent") &&
            library.bind(module_load, "cuModuleLoadData") && library.bind(module_unload, "cuModuleUnload") &&
            library.bind(module_function, "cuModuleGetFunction") &&
            library.bind(function_attribute, "cuFuncSetAttribute") &&
            library.bind(function_get_attribute, "cuFuncGetAttribute") && library.bind(launch, "cuLaunchKernel") &&
            library.bind(error_string, "cuGetErrorString") &&
            // cuda.h maps these names to their _v2 entry points.
            library.bind(memory_allocate, "cuMemAlloc_v2") && library.bind(memory_free, "cuMemFree_v2") &&
            library.bind(copy_to_device, "cuMemcpyHtoD_v2") && library.bind(copy_to_host, "cuMemcpyDtoHAsync_v2") &&
            library.bind(stream_synchronize, "cuStreamSynchronize") && library.bind(memset, "cuMemsetD8_v2") &&
            library.bind(event_create, "cuEventCreate") && library.bind(event_destroy, "cuEventDestroy_v2") &&
            library.bind(event_record, "cuEventRecord") && library.bind(event_synchronize, "cuEventSynchronize") &&
            // The first entry point of this name, with the same signature as the _v2 that
            // cuda.h 13 maps it to: every driver has it, older ones lack the _v2.
            library.bind(event_elapsed, "cuEventElapsedTime") && library.bind(synchronize, "cuCtxSynchronize");
        if (!bound) {
            error = "CUDA driver at " + library.path() + " lacks an expected symbol";
            return;
        }
        library.bind(encode_tiled, "cuTensorMapEncodeTiled");      // optional: null where missing
        library.bind(launch_with_attributes, "cuLaunchKernelEx");  // optional as well
        library.bind(max_active_clusters, "cuOccupancyMaxActiveClusters");
        if (CUresult status = init(0); status != CUDA_SUCCESS) {
            error = "cuInit failed: " + describe(status);
            return;
        }
        int count = 0;
        if (device_count(&count) != CUDA_SUCCESS || count == 0) error = "the CUDA driver sees no device";
    }

    std::string describe(CUresult status) const {
        const char* text = nullptr;
        if (error_string) error_string(status, &text);
        return text ? text : "CUDA error " + std::to_string(status);
    }

    void check(CUresult status, const char* what) const {
        if (status != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + ": " + describe(status));
    }

    // For the calls that load a module and find its kernel: the statuses that judge the
    // code itself throw CodeRejected, any other (out of memory, the context) as check does.
    void check_code(CUresult status, const std::string& what) const {
        switch (status) {
            case CUDA_SUCCESS:
                return;
            case CUDA_ERROR_INVALID_IMAGE:
            case CUDA_ERROR_NO_BINARY_FOR_GPU:
            case CUDA_ERROR_INVALID_PTX:
            case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
            case CUDA_ERROR_NOT_FOUND:  // no kernel of that name
                throw CodeRejected(what + ": " + describe(status));
            default:
                check(status, what.c_str());
        }
    }

    // The device's primary context, the one PyTorch and the runtime API use. It is retained
    // once per device and never released: the kernels and buffers loaded into it live until
    // the process ends, and the driver destroys its contexts then.
    CUcontext primary_context(int ordinal) const {
        const std::lock_guard lock(primary_mutex);
        if (const auto found = primary.find(ordinal); found != primary.end()) return found->second;
        CUdevice device;
        CUcontext context = nullptr;
        CUresult status = device_get(&device, ordinal);
        if (status == CUDA_SUCCESS) status = retain_primary(&context, device);
        check(status, "retaining the device's primary context");
        primary.emplace(ordinal, context);
        return context;
    }

private:
    mutable std::mutex primary_mutex;
    mutable std::map<int, CUcontext> primary;
};

const Nvrtc& nvrtc() {
    static const Nvrtc instance;
    return instance;
}

const Driver& driver() {
    static const Driver instance;
    return instance;
}

// A driver already shut down at process exit (CUDA_ERROR_DEINITIALIZED) released
// everything with its contexts.
void log_failed_release(const char* call, CUresult status) noexcept {
    if (status == CUDA_ERROR_DEINITIALIZED) return;
    const char* text = nullptr;
    if (driver().error_string) driver().error_string(status, &text);
    fajit::log_failed_release(call, text ? text : "unknown CUDA error");
}

// Makes a context current on the calling thread for the scope's life, and the caller's
// current again after: the caller's may be another context or none (an engine's worker
// thread), and a library call must not change it. Comparing first keeps the usual case (the
// caller's is the one wanted) to one driver call.
class ContextScope {
public:
    explicit ContextScope(CUcontext wanted) {
        status_ = driver().get_current(&caller_);
        if (status_ == CUDA_SUCCESS && caller_ != wanted) {
            status_ = driver().set_current(wanted);
            switched_ = status_ == CUDA_SUCCESS;
        }
    }
    ~ContextScope() {
        if (!switched_) return;
        if (CUresult status = driver().set_current(caller_); status != CUDA_SUCCESS)
            log_failed_release("cuCtxSetCurrent (the caller's context)", status);
    }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

    // CUDA_SUCCESS when the wanted context is current.
    CUresult status() const { return status_; }
    // Throws when the wanted context could not be made current.
    void check() const { driver().check(status_, "making the device's context current"); }

private:
    CUcontext caller_ = nullptr;
    CUresult status_ = CUDA_SUCCESS;
    bool switched_ = false;
};

// The scope of a backend call on a device: its primary context is current within it.
class DeviceScope : public ContextScope {
public:
    explicit DeviceScope(int ordinal) : ContextScope(driver().primary_context(ordinal)) { check(); }
};

class CudaKernel final : public LoadedKernel {
public:
    // context: the device's primary context, which holds the module.
    CudaKernel(CUcontext context, CUmodule module, CUfunction function, unsigned static_bytes)
        : context_(context), module_(module), function_(function), static_bytes_(static_bytes) {}
    // cuModuleUnload acts on the current context, so the module's is made current first.
    ~CudaKernel() override {
        const ContextScope scope(context_);
        CUresult status = scope.status();
        if (status == CUDA_SUCCESS) status = driver().module_unload(module_);
        if (status != CUDA_SUCCESS) log_failed_release("cuModuleUnload", status);
    }
    CudaKernel(const CudaKernel&) = delete;
    CudaKernel& operator=(const CudaKernel&) = delete;

    // A launch runs in the calling thread's current context; the module lives in its
    // device's primary context, so that is current for the launch.
    std::string launch(const LaunchShape& shape, const void* argument, std::size_t argument_bytes,
                       void* stream) override {
        const Driver& api = driver();
        const ContextScope scope(context_);
        if (scope.status() != CUDA_SUCCESS)
            return "making the kernel's context current: " + api.describe(scope.status());
        if (std::string error = opt_in(shape); !error.empty()) return error;
        // The kernel's one parameter, which the driver places where the kernel expects it.
        // Not as a parameter buffer: that is copied to the start of the parameter space, and
        // fa_params, 64-byte aligned for its tensor maps, starts 48 bytes in on sm_90a
        // (the space begins at 0x210; the cubin's KPARAM_INFO gives offset 48).
        (void)argument_bytes;  // the driver knows the parameter's size from the kernel
        void* parameters[] = {const_cast<void*>(argument)};
        if (shape.cluster_blocks > 1 && !api.launch_with_attributes)
            return "a cluster launch needs cuLaunchKernelEx, which this driver lacks";
        CUlaunchAttribute attributes[2] = {};
        unsigned count = 0;
        if (shape.programmatic && api.launch_with_attributes) {
            attributes[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attributes[count++].value.programmaticStreamSerializationAllowed = 1;
        }
        if (shape.cluster_blocks > 1) attributes[count++] = cluster_attribute(shape);
        if (count > 0) {
            CUlaunchConfig config = launch_config(shape, stream);
            config.attrs = attributes;
            config.numAttrs = count;
            const CUresult status = api.launch_with_attributes(&config, function_, parameters, nullptr);
            return status == CUDA_SUCCESS ? std::string{} : "cuLaunchKernelEx: " + api.describe(status);
        }
        const CUresult status =
            api.launch(function_, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
                       shape.block[2], shape.shared_bytes, static_cast<CUstream>(stream), parameters, nullptr);
        return status == CUDA_SUCCESS ? std::string{} : "cuLaunchKernel: " + api.describe(status);
    }

    // Asked once per cluster size: the answer depends only on the kernel, whose block and
    // shared memory a spec fixes, and a decode call is short enough that a driver call shows.
    int clusters_held(const LaunchShape& shape) override {
        const Driver& api = driver();
        if (shape.cluster_blocks < 2 || shape.cluster_blocks >= clusters_held_.size() || !api.launch_with_attributes ||
            !api.max_active_clusters)
            return 0;
        std::atomic<int>& known = clusters_held_[shape.cluster_blocks];
        if (int known_plus_one = known.load(std::memory_order_relaxed); known_plus_one > 0) return known_plus_one - 1;
        const ContextScope scope(context_);
        int held = 0;
        if (scope.status() == CUDA_SUCCESS && opt_in(shape).empty()) {
            // Past 8 blocks (the portable size) a cluster needs the kernel's leave.
            const bool allowed = shape.cluster_blocks <= 8 ||
                                 api.function_attribute(function_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                                        1) == CUDA_SUCCESS;
            CUlaunchConfig config = launch_config(shape, nullptr);
            CUlaunchAttribute cluster = cluster_attribute(shape);
            config.attrs = &cluster;
            config.numAttrs = 1;
            if (!allowed || api.max_active_clusters(&held, function_, &config) != CUDA_SUCCESS) held = 0;
        }
        known.store(held + 1, std::memory_order_relaxed);
        return held;
    }

private:
    // Past 48 KiB of static and dynamic shared memory together, a block needs the opt-in:
    // a kernel's static arrays (an emulation's scratch) count too. It is set once, not
    // before every launch: a decode call is short enough that a driver call shows. A spec's
    // layout fixes the size, so calls on several threads store one value. The kernel's
    // context is current.
    std::string opt_in(const LaunchShape& shape) {
        if (static_bytes_ + shape.shared_bytes <= 48u * 1024u ||
            shape.shared_bytes == opted_in_bytes_.load(std::memory_order_relaxed))
            return {};
        CUresult status = driver().function_attribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                      static_cast<int>(shape.shared_bytes));
        if (status != CUDA_SUCCESS) return "cuFuncSetAttribute: " + driver().describe(status);
        opted_in_bytes_.store(shape.shared_bytes, std::memory_order_relaxed);
        return {};
    }
    static CUlaunchConfig launch_config(const LaunchShape& shape, void* stream) {
        CUlaunchConfig config{};
        config.gridDimX = shape.grid[0];
        config.gridDimY = shape.grid[1];
        config.gridDimZ = shape.grid[2];
        config.blockDimX = shape.block[0];
        config.blockDimY = shape.block[1];
        config.blockDimZ = shape.block[2];
        config.sharedMemBytes = shape.shared_bytes;
        config.hStream = static_cast<CUstream>(stream);
        return config;
    }
    static CUlaunchAttribute cluster_attribute(const LaunchShape& shape) {
        CUlaunchAttribute cluster{};
        cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        cluster.value.clusterDim.x = shape.cluster_blocks;
        cluster.value.clusterDim.y = 1;
        cluster.value.clusterDim.z = 1;
        return cluster;
    }

    CUcontext context_;
    CUmodule module_;
    CUfunction function_;
    unsigned static_bytes_;                    // the kernel's static shared memory
    std::atomic<unsigned> opted_in_bytes_{0};  // the dynamic shared memory last opted in to
    // By cluster size: one more than how many the device holds at once, 0 until asked.
    std::array<std::atomic<int>, 17> clusters_held_{};
};

class CudaEvent final : public DeviceEvent {
public:
    CudaEvent(int device, CUevent event) : device_(device), event_(event) {}
    ~CudaEvent() override {
        if (CUresult status = driver().event_destroy(event_); status != CUDA_SUCCESS)
            log_failed_release("cuEventDestroy", status);
    }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    void record(void* stream) override {
        // The null stream means the default stream of the current context.
        const DeviceScope scope(device_);
        driver().check(driver().event_record(event_, static_cast<CUstream>(stream)), "cuEventRecord");
    }

    float milliseconds_since(const DeviceEvent& earlier) const override {
        const auto* start = dynamic_cast<const CudaEvent*>(&earlier);
        if (!start) throw std::invalid_argument("milliseconds_since: the earlier event is not a CUDA event");
        driver().check(driver().event_synchronize(event_), "cuEventSynchronize");
        float milliseconds = 0.0f;
        driver().check(driver().event_elapsed(&milliseconds, start->event_, event_), "cuEventElapsedTime");
        return milliseconds;
    }

private:
    int device_;
    CUevent event_;
};

class CudaBackend final : public Backend {
public:
    std::string_view name() const override { return "cuda"; }
    bool targets(std::string_view arch) const override { return arch.starts_with("sm_"); }
    std::string compiler_unavailable_reason() const override { return nvrtc().error; }
    std::string runtime_unavailable_reason() const override { return driver().error; }

    std::string compiler_identity() const override { return nvrtc().identity(); }

    CompileResult compile(const CompileRequest& request) const override {
        // ptxas -v puts the kernel's registers, spills and shared memory in the log, which every
        // cache entry keeps: `fa-jit compile --isa` reads them there (ptxas_report.hpp).
        std::vector<std::string> options = {"--gpu-architecture=" + request.arch, "-std=c++17", "--ptxas-options=-v"};
        if (nvrtc().has_result_cache) options.push_back("--no-cache");
        return compile_program(nvrtc(), request, std::move(options));
    }

    std::vector<DeviceInfo> devices() const override {
        const Driver& api = driver();
        std::vector<DeviceInfo> found;
        if (!api.error.empty()) return found;
        int count = 0;
        api.device_count(&count);
        for (int ordinal = 0; ordinal < count; ++ordinal) {
            CUdevice device;
            if (api.device_get(&device, ordinal) != CUDA_SUCCESS) continue;
            int major = 0, minor = 0, sms = 0, shared = 0;
            api.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
            api.attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
            api.attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
            api.attribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
            char name[256] = {};
            api.device_name(name, sizeof name, device);
            DeviceInfo info;
            info.ordinal = ordinal;
            info.name = name;
            // Architecture-specific features (wgmma, setmaxnreg) need the "a" target from sm_90 on.
            info.arch = "sm_" + std::to_string(major * 10 + minor) + (major >= 9 ? "a" : "");
            info.compute_units = sms;
            info.shared_memory_per_block = static_cast<std::size_t>(shared);
            found.push_back(info);
        }
        return found;
    }

    std::unique_ptr<LoadedKernel> load(int device, std::span<const std::byte> code,
                                       const std::string& lowered_name) const override {
        const Driver& api = driver();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const CUcontext context = api.primary_context(device);
        const ContextScope scope(context);
        scope.check();
        CUmodule module;
        api.check_code(api.module_load(&module, code.data()), "cuModuleLoadData");
        CUfunction function;
        if (CUresult status = api.module_function(&function, module, lowered_name.c_str()); status != CUDA_SUCCESS) {
            api.module_unload(module);
            api.check_code(status, "cuModuleGetFunction(" + lowered_name + ")");
        }
        int static_bytes = 0;
        if (CUresult status = api.function_get_attribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
            status != CUDA_SUCCESS) {
            api.module_unload(module);
            api.check(status, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)");
        }
        return std::make_unique<CudaKernel>(context, module, function, static_cast<unsigned>(static_bytes));
    }

    void* allocate(int device, std::size_t bytes) const override {
        const Driver& api = driver();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const DeviceScope scope(device);
        CUdeviceptr pointer = 0;
        api.check(api.memory_allocate(&pointer, bytes), "cuMemAlloc");
        return reinterpret_cast<void*>(pointer);
    }

    void release(int device, void* pointer) const override {
        const DeviceScope scope(device);
        driver().check(driver().memory_free(reinterpret_cast<CUdeviceptr>(pointer)), "cuMemFree");
    }

    void upload(int device, void* destination, const void* source, std::size_t bytes) const override {
        const DeviceScope scope(device);
        driver().check(driver().copy_to_device(reinterpret_cast<CUdeviceptr>(destination), source, bytes),
                       "cuMemcpyHtoD");
    }

    void download(int device, void* destination, const void* source, std::size_t bytes, void* stream) const override {
        const DeviceScope scope(device);
        const auto queue = static_cast<CUstream>(stream);
        driver().check(driver().copy_to_host(destination, reinterpret_cast<CUdeviceptr>(source), bytes, queue),
                       "cuMemcpyDtoHAsync");
        driver().check(driver().stream_synchronize(queue), "cuStreamSynchronize");
    }

    void fill(int device, void* destination, unsigned char byte, std::size_t bytes) const override {
        const DeviceScope scope(device);
        driver().check(driver().memset(reinterpret_cast<CUdeviceptr>(destination), byte, bytes), "cuMemsetD8");
    }

    std::string encode_tensor_map(const TensorMapRequest& request, TensorMap& map) const override {
        static_assert(sizeof(CUtensorMap) == sizeof(TensorMap));
        const Driver& api = driver();
        if (!api.error.empty()) return api.error;
        if (!api.encode_tiled) return "the CUDA driver has no cuTensorMapEncodeTiled";
        const cuuint64_t extents[4] = {request.extents[0], request.extents[1], request.extents[2], request.extents[3]};
        const cuuint64_t strides[3] = {request.stride_bytes[0], request.stride_bytes[1], request.stride_bytes[2]};
        const cuuint32_t box[4] = {request.box[0], request.box[1], 1, 1};
        const cuuint32_t element_strides[4] = {1, 1, 1, 1};
        CUtensorMap encoded;
        // Elements as raw bits: a copy needs no arithmetic type, and zeros fill the same.
        const auto type = request.element_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
        const CUresult status =
            api.encode_tiled(&encoded, type, 4, const_cast<void*>(request.base), extents, strides, box, element_strides,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (status != CUDA_SUCCESS) return "cuTensorMapEncodeTiled: " + api.describe(status);
        std::memcpy(map.data(), &encoded, sizeof encoded);
        return {};
    }

    std::unique_ptr<DeviceEvent> create_event(int device) const override {
        const Driver& api = driver();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const DeviceScope scope(device);
        CUevent event;
        api.check(api.event_create(&event, CU_EVENT_DEFAULT), "cuEventCreate");
        return std::make_unique<CudaEvent>(device, event);
    }

    void synchronize(int device) const override {
        const DeviceScope scope(device);
        driver().check(driver().synchronize(), "cuCtxSynchronize");
    }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace fajit
