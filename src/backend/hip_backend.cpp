// AMD backend: HIPRTC compiles, the HIP module API loads and launches. Both are
// opened at run time. ROCm 5.x ships HIPRTC inside libamdhip64, ROCm 6+ as libhiprtc.
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <link.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backend/dynamic_library.hpp"
#include "backend/hip_backend.hpp"
#include "backend/runtime_compiler.hpp"

// The headers may redirect an API to a versioned symbol (hipGetDeviceProperties ->
// hipGetDevicePropertiesR0600 on ROCm 6); binding the expanded name keeps the struct
// layout we were compiled with.
#define FAJIT_SYMBOL_NAME(name) FAJIT_SYMBOL_NAME_EXPANDED(name)
#define FAJIT_SYMBOL_NAME_EXPANDED(name) #name

namespace fajit {
namespace {

// The code-object compiler (comgr) is a dependency of the HIPRTC library; its
// bytes decide the generated code as much as HIPRTC's do.
std::string loaded_library_path(std::string_view fragment) {
    struct Search {
        std::string_view fragment;
        std::string found;
    } search{fragment, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            auto* state = static_cast<Search*>(data);
            if (info->dlpi_name && std::string_view(info->dlpi_name).find(state->fragment) != std::string_view::npos) {
                state->found = info->dlpi_name;
                return 1;
            }
            return 0;
        },
        &search);
    return search.found;
}

struct Hiprtc {
    using program_type = hiprtcProgram;
    using result_type = hiprtcResult;
    static constexpr hiprtcResult success = HIPRTC_SUCCESS;
    static constexpr hiprtcResult compilation_error = HIPRTC_ERROR_COMPILATION;
    static constexpr const char* prefix = "hiprtc";
    static constexpr const char* destroy_call = "hiprtcDestroyProgram";

    DynamicLibrary library{{"libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5", "libhiprtc.so", "libamdhip64.so"}};
    decltype(&hiprtcVersion) version = nullptr;
    decltype(&hiprtcCreateProgram) create = nullptr;
    decltype(&hiprtcDestroyProgram) destroy = nullptr;
    decltype(&hiprtcCompileProgram) compile = nullptr;
    decltype(&hiprtcGetProgramLogSize) log_size = nullptr;
    decltype(&hiprtcGetProgramLog) log = nullptr;
    decltype(&hiprtcGetCodeSize) code_size = nullptr;
    decltype(&hiprtcGetCode) code = nullptr;
    decltype(&hiprtcAddNameExpression) add_name = nullptr;
    decltype(&hiprtcGetLoweredName) lowered_name = nullptr;
    decltype(&hiprtcGetErrorString) error_string = nullptr;
    std::string error;

    Hiprtc() {
        if (!library.loaded()) {
            error = "HIPRTC not found (" + library.error() + ")";
            return;
        }
        const bool bound =
            library.bind(version, "hiprtcVersion") && library.bind(create, "hiprtcCreateProgram") &&
            library.bind(destroy, "hiprtcDestroyProgram") && library.bind(compile, "hiprtcCompileProgram") &&
            library.bind(log_size, "hiprtcGetProgramLogSize") && library.bind(log, "hiprtcGetProgramLog") &&
            library.bind(code_size, "hiprtcGetCodeSize") && library.bind(code, "hiprtcGetCode") &&
            library.bind(add_name, "hiprtcAddNameExpression") && library.bind(lowered_name, "hiprtcGetLoweredName") &&
            library.bind(error_string, "hiprtcGetErrorString");
        if (!bound) {
            error = "HIPRTC at " + library.path() + " lacks an expected symbol";
            return;
        }
    }

    // Hashing the libraries costs tens of milliseconds, so it is done once, on first
    // use: listing devices or asking whether HIPRTC is there needs no cache key.
    const std::string& identity() const {
        std::call_once(identity_once, [this] {
            if (!error.empty()) return;
            int major = 0, minor = 0;
            version(&major, &minor);
            const std::string comgr = loaded_library_path("libamd_comgr");
            identity_text = "hiprtc " + std::to_string(major) + "." + std::to_string(minor) + " " +
                            file_fingerprint(library.path()) + " comgr " +
                            (comgr.empty() ? "none" : file_fingerprint(comgr));
        });
        return identity_text;
    }

private:
    mutable std::once_flag identity_once;
    mutable std::string identity_text = "hiprtc-unavailable";
};

struct HipRuntime {
    DynamicLibrary library{{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}};
    decltype(&hipGetDeviceCount) device_count = nullptr;
    decltype(&hipGetDeviceProperties) properties = nullptr;
    decltype(&hipSetDevice) set_device = nullptr;
    decltype(&hipGetDevice) get_device = nullptr;
    decltype(&hipModuleLoadData) module_load = nullptr;
    decltype(&hipModuleUnload) module_unload = nullptr;
    decltype(&hipModuleGetFunction) module_function = nullptr;
    decltype(&hipModuleLaunchKernel) launch = nullptr;
    decltype(&hipGetErrorString) error_string = nullptr;
    hipError_t (*memory_allocate)(void**, std::size_t) = nullptr;  // hipMalloc has template overloads
    decltype(&hipFree) memory_free = nullptr;
    decltype(&hipMemcpy) copy = nullptr;
    decltype(&hipMemcpyAsync) copy_async = nullptr;
    decltype(&hipStreamSynchronize) stream_synchronize = nullptr;
    decltype(&hipMemset) memset = nullptr;
    decltype(&hipEventCreate) event_create = nullptr;
    decltype(&hipEventDestroy) event_destroy = nullptr;
    decltype(&hipEventRecord) event_record = nullptr;
    decltype(&hipEventSynchronize) event_synchronize = nullptr;
    decltype(&hipEventElapsedTime) event_elapsed = nullptr;
    decltype(&hipDeviceSynchronize) synchronize = nullptr;
    std::string error;

    HipRuntime() {
        if (!library.loaded()) {
            error = "HIP runtime not found (" + library.error() + ")";
            return;
        }
        const bool bound =
            library.bind(device_count, "hipGetDeviceCount") &&
            library.bind(properties, FAJIT_SYMBOL_NAME(hipGetDeviceProperties)) &&
            library.bind(set_device, "hipSetDevice") && library.bind(get_device, "hipGetDevice") &&
            library.bind(module_load, "hipModuleLoadData") && library.bind(module_unload, "hipModuleUnload") &&
            library.bind(module_function, "hipModuleGetFunction") && library.bind(launch, "hipModuleLaunchKernel") &&
            library.bind(error_string, "hipGetErrorString") && library.bind(memory_allocate, "hipMalloc") &&
            library.bind(memory_free, "hipFree") && library.bind(copy, "hipMemcpy") &&
            library.bind(copy_async, "hipMemcpyAsync") && library.bind(stream_synchronize, "hipStreamSynchronize") &&
            library.bind(memset, "hipMemset") && library.bind(event_create, "hipEventCreate") &&
            library.bind(event_destroy, "hipEventDestroy") && library.bind(event_record, "hipEventRecord") &&
            library.bind(event_synchronize, "hipEventSynchronize") &&
            library.bind(event_elapsed, "hipEventElapsedTime") && library.bind(synchronize, "hipDeviceSynchronize");
        if (!bound) {
            error = "HIP runtime at " + library.path() + " lacks an expected symbol";
            return;
        }
        int count = 0;
        if (device_count(&count) != hipSuccess || count == 0) error = "the HIP runtime sees no device";
    }

    void check(hipError_t status, const std::string& what) const {
        if (status != hipSuccess) throw std::runtime_error(what + ": " + error_string(status));
    }

    // For the calls that load a module and find its kernel: the statuses that judge the
    // code itself throw CodeRejected, any other (out of memory, the device) as check does.
    void check_code(hipError_t status, const std::string& what) const {
        switch (status) {
            case hipSuccess:
                return;
            case hipErrorInvalidImage:
            case hipErrorNoBinaryForGpu:
            case hipErrorInvalidKernelFile:
            case hipErrorSharedObjectInitFailed:
            case hipErrorNotFound:  // no kernel of that name
                throw CodeRejected(what + ": " + error_string(status));
            default:
                check(status, what);
        }
    }
};

const Hiprtc& hiprtc() {
    static const Hiprtc instance;
    return instance;
}

const HipRuntime& hip() {
    static const HipRuntime instance;
    return instance;
}

// A runtime already shut down at process exit (hipErrorDeinitialized) released everything
// with its devices.
void log_failed_release(const char* call, hipError_t status) noexcept {
    if (status == hipErrorDeinitialized) return;
    fajit::log_failed_release(call, hip().error_string(status));
}

// Makes a device current on the calling thread for the scope's life, and the caller's
// current again after: a library call must not change which device the caller's later
// calls go to. Comparing first keeps the usual case (the caller's is the one wanted) to one
// runtime call. For the paths that cannot throw; DeviceScope below throws.
class CurrentDeviceScope {
public:
    explicit CurrentDeviceScope(int wanted) {
        status_ = hip().get_device(&caller_);
        if (status_ == hipSuccess && caller_ != wanted) {
            status_ = hip().set_device(wanted);
            switched_ = status_ == hipSuccess;
        }
    }
    ~CurrentDeviceScope() {
        if (!switched_) return;
        if (hipError_t status = hip().set_device(caller_); status != hipSuccess)
            log_failed_release("hipSetDevice (the caller's device)", status);
    }
    CurrentDeviceScope(const CurrentDeviceScope&) = delete;
    CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

    // hipSuccess when the wanted device is current.
    hipError_t status() const { return status_; }
    // Throws when the wanted device could not be made current.
    void check() const { hip().check(status_, "making the device current"); }

private:
    int caller_ = 0;
    hipError_t status_ = hipSuccess;
    bool switched_ = false;
};

// The scope of a backend call on a device: the device is current within it, or it throws.
class DeviceScope : public CurrentDeviceScope {
public:
    explicit DeviceScope(int ordinal) : CurrentDeviceScope(ordinal) { check(); }
};

class HipKernel final : public LoadedKernel {
public:
    HipKernel(int device, hipModule_t module, hipFunction_t function)
        : device_(device), module_(module), function_(function) {}
    // The module was loaded with its device current, and is unloaded the same way.
    ~HipKernel() override {
        const CurrentDeviceScope scope(device_);
        hipError_t status = scope.status();
        if (status == hipSuccess) status = hip().module_unload(module_);
        if (status != hipSuccess) log_failed_release("hipModuleUnload", status);
    }
    HipKernel(const HipKernel&) = delete;
    HipKernel& operator=(const HipKernel&) = delete;

    std::string launch(const LaunchShape& shape, const void* argument, std::size_t argument_bytes,
                       void* stream) override {
        const HipRuntime& api = hip();
        // Passing the argument struct as one buffer keeps the launch independent of its fields.
        void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(argument), HIP_LAUNCH_PARAM_BUFFER_SIZE,
                          &argument_bytes, HIP_LAUNCH_PARAM_END};
        const CurrentDeviceScope scope(device_);
        hipError_t status = scope.status();
        if (status == hipSuccess)
            status = api.launch(function_, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
                                shape.block[2], shape.shared_bytes, static_cast<hipStream_t>(stream), nullptr, config);
        return status == hipSuccess ? std::string{} : std::string("hipModuleLaunchKernel: ") + api.error_string(status);
    }

private:
    int device_;
    hipModule_t module_;
    hipFunction_t function_;
};

class HipEvent final : public DeviceEvent {
public:
    HipEvent(int device, hipEvent_t event) : device_(device), event_(event) {}
    ~HipEvent() override {
        if (hipError_t status = hip().event_destroy(event_); status != hipSuccess)
            log_failed_release("hipEventDestroy", status);
    }
    HipEvent(const HipEvent&) = delete;
    HipEvent& operator=(const HipEvent&) = delete;

    void record(void* stream) override {
        // The null stream means the default stream of the current device.
        const DeviceScope scope(device_);
        hip().check(hip().event_record(event_, static_cast<hipStream_t>(stream)), "hipEventRecord");
    }

    float milliseconds_since(const DeviceEvent& earlier) const override {
        const auto* start = dynamic_cast<const HipEvent*>(&earlier);
        if (!start) throw std::invalid_argument("milliseconds_since: the earlier event is not a HIP event");
        hip().check(hip().event_synchronize(event_), "hipEventSynchronize");
        float milliseconds = 0.0f;
        hip().check(hip().event_elapsed(&milliseconds, start->event_, event_), "hipEventElapsedTime");
        return milliseconds;
    }

private:
    int device_;
    hipEvent_t event_;
};

class HipBackend final : public Backend {
public:
    std::string_view name() const override { return "hip"; }
    bool targets(std::string_view arch) const override { return arch.starts_with("gfx"); }
    std::string compiler_unavailable_reason() const override { return hiprtc().error; }
    std::string runtime_unavailable_reason() const override { return hip().error; }

    std::string compiler_identity() const override { return hiprtc().identity(); }

    CompileResult compile(const CompileRequest& request) const override {
        return compile_program(hiprtc(), request, {"--offload-arch=" + request.arch, "-O3", "-std=c++17"});
    }

    std::vector<DeviceInfo> devices() const override {
        const HipRuntime& api = hip();
        std::vector<DeviceInfo> found;
        if (!api.error.empty()) return found;
        int count = 0;
        (void)api.device_count(&count);  // count stays 0 on failure
        for (int ordinal = 0; ordinal < count; ++ordinal) {
            hipDeviceProp_t properties{};
            if (api.properties(&properties, ordinal) != hipSuccess) continue;
            DeviceInfo info;
            info.ordinal = ordinal;
            info.name = properties.name;
            info.arch = properties.gcnArchName;  // with features, e.g. gfx90a:sramecc+:xnack-
            info.compute_units = properties.multiProcessorCount;
            info.shared_memory_per_block = properties.sharedMemPerBlock;
            found.push_back(info);
        }
        return found;
    }

    std::unique_ptr<LoadedKernel> load(int device, std::span<const std::byte> code,
                                       const std::string& lowered_name) const override {
        const HipRuntime& api = hip();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const DeviceScope scope(device);
        hipModule_t module;
        api.check_code(api.module_load(&module, code.data()), "hipModuleLoadData");
        hipFunction_t function;
        if (hipError_t status = api.module_function(&function, module, lowered_name.c_str()); status != hipSuccess) {
            (void)api.module_unload(module);
            api.check_code(status, "hipModuleGetFunction(" + lowered_name + ")");
        }
        return std::make_unique<HipKernel>(device, module, function);
    }

    void* allocate(int device, std::size_t bytes) const override {
        const HipRuntime& api = hip();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const DeviceScope scope(device);
        void* pointer = nullptr;
        api.check(api.memory_allocate(&pointer, bytes), "hipMalloc");
        return pointer;
    }

    void release(int device, void* pointer) const override {
        const DeviceScope scope(device);
        hip().check(hip().memory_free(pointer), "hipFree");
    }

    void upload(int device, void* destination, const void* source, std::size_t bytes) const override {
        const DeviceScope scope(device);
        hip().check(hip().copy(destination, source, bytes, hipMemcpyHostToDevice), "hipMemcpy");
    }

    void download(int device, void* destination, const void* source, std::size_t bytes, void* stream) const override {
        const DeviceScope scope(device);
        const auto queue = static_cast<hipStream_t>(stream);
        hip().check(hip().copy_async(destination, source, bytes, hipMemcpyDeviceToHost, queue), "hipMemcpyAsync");
        hip().check(hip().stream_synchronize(queue), "hipStreamSynchronize");
    }

    void fill(int device, void* destination, unsigned char byte, std::size_t bytes) const override {
        const DeviceScope scope(device);
        hip().check(hip().memset(destination, byte, bytes), "hipMemset");
    }

    std::unique_ptr<DeviceEvent> create_event(int device) const override {
        const HipRuntime& api = hip();
        if (!api.error.empty()) throw std::runtime_error(api.error);
        const DeviceScope scope(device);
        hipEvent_t event;
        api.check(api.event_create(&event), "hipEventCreate");
        return std::make_unique<HipEvent>(device, event);
    }

    std::string encode_tensor_map(const TensorMapRequest&, TensorMap&) const override {
        return "HIP has no tensor maps";
    }

    void synchronize(int device) const override {
        const DeviceScope scope(device);
        hip().check(hip().synchronize(), "hipDeviceSynchronize");
    }
};

}  // namespace

std::unique_ptr<Backend> make_hip_backend() { return std::make_unique<HipBackend>(); }

}  // namespace fajit
