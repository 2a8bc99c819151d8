#pragma once
// The C++ entry point: a Runtime owns the backends, the kernel cache and the loaded
// kernels; one per process is enough and it is safe to share between threads.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fajit/attention.hpp"
#include "fajit/kernel_spec.hpp"
#include "fajit/options.hpp"

namespace fajit {

class Backend;

// The library's version, e.g. "0.1.0".
std::string_view version();

// Why a call whose arguments were accepted still failed. Malformed arguments, options
// and specs throw std::invalid_argument instead.
enum class ErrorKind {
    no_device,       // no backend sees a device
    unsupported,     // FAJIT_STRICT: the selected variant cannot run the shape
    compile_failed,  // the compiler rejected the source (and no fallback was allowed)
    load_failed,     // the device loader rejected the code (and no fallback was allowed)
    launch_failed,   // the launch itself failed
};

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

// A compile that failed; what() names the variant, log() is the compiler's full log.
class CompileError : public Error {
public:
    // rejected: the compiler judged the source (a compilation error), which compiling it
    // again would repeat; false when it failed for another reason (out of memory, an
    // internal error), which says nothing about the source.
    CompileError(const std::string& what, std::string log, bool rejected)
        : Error(ErrorKind::compile_failed, what), log_(std::move(log)), rejected_(rejected) {}
    const std::string& log() const { return log_; }
    bool rejected() const { return rejected_; }

private:
    std::string log_;
    bool rejected_;
};

struct CompiledKernel {
    KernelSpec spec;
    std::string key;              // cache key, 32 hex digits
    std::vector<std::byte> code;  // AMDGPU code object or cubin
    std::string lowered_name;
    std::string log;
    double compile_seconds = 0.0;  // of the compile that produced it, wherever that ran
    bool compiled_now = false;     // false when memory or disk had it
    // Set when the disk cache could not keep the code object: why its last attempt to store
    // it failed (no space, read-only, not a directory, ...). The kernel is usable all the same.
    std::error_code store_error;
};

struct Device {
    std::string backend;  // "hip" or "cuda"
    int ordinal = 0;
    std::string name;
    std::string arch;
    int compute_units = 0;
    std::size_t shared_memory_per_block = 0;
};

class Runtime {
public:
    explicit Runtime(Options options = Options::from_environment());
    // Runs on the given backends instead of those built in: for tests and benchmarks.
    Runtime(Options options, std::vector<std::unique_ptr<Backend>> backends);
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
    // the first backend with a device, with the variant select() names. Throws
    // std::invalid_argument naming the bad field before anything touches a device, Error
    // when there is no device, when FAJIT_STRICT refuses a fallback, or when the launch fails.
    //
    // The first call of a (device, shape class) selects, compiles (or finds in the cache)
    // and loads its variant; a variant that fails to compile or load is recorded and the
    // call runs scalar instead, saying so once. Later calls of the class take a lock-free path.
    void attention(const AttentionArgs&, void* stream);

    // Runs a given variant (its arch must be the device's), for tests and benchmarks.
    void run(const KernelSpec&, const AttentionArgs&, void* stream);

    // The spec attention() runs for args, after any fallback; prepares it as attention() would.
    KernelSpec select(const AttentionArgs&);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace fajit
