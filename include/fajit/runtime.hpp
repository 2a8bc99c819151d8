#pragma once
// The C++ entry point: a Runtime owns the backends, the kernel cache and the loaded
// kernels; one per process is enough and it is safe to share between threads.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fajit/attention.hpp"
#include "fajit/kernel_spec.hpp"
#include "fajit/options.hpp"

namespace fajit {

// A compile that failed; what() names the variant, log() is the compiler's full log.
class CompileError : public std::runtime_error {
public:
    CompileError(const std::string& what, std::string log) : std::runtime_error(what), log_(std::move(log)) {}
    const std::string& log() const { return log_; }

private:
    std::string log_;
};

struct CompiledKernel {
    KernelSpec spec;
    std::string key;                 // cache key, 32 hex digits
    std::vector<std::byte> code;     // AMDGPU code object or cubin
    std::string lowered_name;
    std::string log;
    double compile_seconds = 0.0;    // of the compile that produced it, wherever that ran
    bool compiled_now = false;       // false when memory or disk had it
};

struct Device {
    std::string backend;             // "hip" or "cuda"
    int ordinal = 0;
    std::string name;
    std::string arch;
    int compute_units = 0;
    std::size_t shared_memory_per_block = 0;
};

class Runtime {
public:
    explicit Runtime(Options options = Options::from_environment());
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Options& options() const;

    // The source the library compiles for spec. Throws std::invalid_argument for an invalid spec.
    std::string emit(const KernelSpec&) const;

    // Compiles spec, or finds it in memory or on disk. Throws CompileError when the
    // compiler rejects it, std::runtime_error when no backend can compile for its arch.
    CompiledKernel prepare(const KernelSpec&);

    // Devices every available runtime sees, and why a backend sees none.
    std::vector<Device> devices() const;
    std::vector<std::string> unavailable_backends() const;

    // Runs attention on stream (hipStream_t or CUstream; null: the default stream) of
    // the first backend with a device. Throws std::invalid_argument naming the bad
    // field before anything touches a device, std::runtime_error when there is no
    // device or the launch fails.
    void attention(const AttentionArgs&, void* stream);

    // Runs a given variant (its arch must be the device's), for tests and benchmarks.
    void run(const KernelSpec&, const AttentionArgs&, void* stream);

    // The spec attention() would run for args on its device.
    KernelSpec select(const AttentionArgs&) const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace fajit
