#pragma once
// The one interface every GPU toolkit sits behind. Implementations load their
// libraries at run time, so a process starts on machines without them; such a
// backend reports itself unavailable with the reason.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fajit {

// The loader judged a code object unusable (see Backend::load): loading the same bytes
// again would fail again.
class CodeRejected : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct CompileRequest {
    std::string source;
    std::string program_name;                   // shown in compiler messages
    std::vector<std::string> name_expressions;  // e.g. "fa_scalar<fajit_spec>"
    std::vector<std::string> options;           // extra compiler options
    std::string arch;                           // full target name
};

struct CompileResult {
    bool ok = false;
    // Not ok because the compiler judged the source (its compilation-error status, or no
    // kernel under the name asked for): compiling again would fail again. Other failures
    // (out of memory, an internal error, a call that could not read the result) say
    // nothing about the source.
    bool rejected = false;
    std::vector<std::byte> code;             // AMDGPU code object or cubin
    std::string log;                         // the compiler's full log, also on success
    std::vector<std::string> lowered_names;  // one per name expression, never empty when ok
};

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    std::string arch;                         // full target name, as compile() takes it
    int compute_units = 0;                    // CUs (AMD) or SMs (NVIDIA)
    std::size_t shared_memory_per_block = 0;  // bytes, the opt-in maximum where one exists
};

struct LaunchShape {
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_bytes = 0;
    // CUDA's programmatic dependent launch (sm_90 on; other backends ignore it): the kernel
    // may start while the stream's kernel before it drains, and waits in its first
    // statement (fa_wait_for_prior_kernels) until that one has finished.
    bool programmatic = false;
    // Blocks along x launched as one thread-block cluster (CUDA sm_90 on; 1: none). Kernels
    // read their cluster's size themselves and are right either way, so what a backend
    // cannot launch so, it refuses; ask LoadedKernel::clusters_held first.
    unsigned cluster_blocks = 1;
};

// A tensor of 16-bit elements [batch, heads, rows, columns] with contiguous columns, and
// the box one tensor-memory-access (TMA) copy moves from it into shared memory, in the
// 128-byte swizzle; rows and columns past the ends land as zeros.
struct TensorMapRequest {
    const void* base = nullptr;          // device address, 16-byte aligned
    std::uint32_t element_bytes = 2;     // 1 or 2; elements are copied as raw bits
    std::uint64_t extents[4] = {};       // columns, rows, heads, batch
    std::uint64_t stride_bytes[3] = {};  // of a row, a head, a batch: multiples of 16
    std::uint32_t box[2] = {};           // columns (one 128-byte swizzle row: 64 or 128), rows
};
// The encoded map, which a kernel reads as a by-value argument (fa_tensor_map).
using TensorMap = std::array<std::byte, 128>;

class LoadedKernel {
public:
    virtual ~LoadedKernel() = default;
    // Launches with one by-value argument of argument_bytes bytes on stream
    // (hipStream_t / CUstream, null for the default stream). Returns an error
    // message, empty on success.
    virtual std::string launch(const LaunchShape&, const void* argument, std::size_t argument_bytes, void* stream) = 0;
    // How many clusters of shape.cluster_blocks blocks of this kernel, with shape's block
    // and shared memory, the device runs at once: 0 where it cannot launch them at all
    // (no clusters in this backend, driver or device, or too large a cluster).
    virtual int clusters_held(const LaunchShape&) { return 0; }
};

// A point in a stream's queue of work. Two of them time the work queued between them,
// on the device, free of host launch overhead.
class DeviceEvent {
public:
    // Never throws: a failed destroy is logged.
    virtual ~DeviceEvent() = default;
    // Marks the point after the work queued so far on stream (hipStream_t / CUstream,
    // null for the default stream).
    virtual void record(void* stream) = 0;
    // Waits until this event's point is reached, then returns the device milliseconds
    // since earlier's. Both must be recorded, on the same device of the same backend.
    virtual float milliseconds_since(const DeviceEvent& earlier) const = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;              // "hip" or "cuda"
    virtual bool targets(std::string_view arch) const = 0;  // can compile for this arch family
    // Empty when the compiler library loaded; else why not.
    virtual std::string compiler_unavailable_reason() const = 0;
    // Empty when the runtime (driver) loaded and has devices; else why not.
    virtual std::string runtime_unavailable_reason() const = 0;
    // Stable text naming the exact compiler build; part of every cache key.
    virtual std::string compiler_identity() const = 0;
    virtual CompileResult compile(const CompileRequest&) const = 0;
    virtual std::vector<DeviceInfo> devices() const = 0;
    // Loads code on a device and resolves one kernel. Throws CodeRejected when the loader
    // judged the code itself (an invalid image, none for this device, no kernel of that
    // name), and std::runtime_error naming the failure for anything else (out of memory,
    // the device's context), which says nothing about the code.
    virtual std::unique_ptr<LoadedKernel> load(int device, std::span<const std::byte> code,
                                               const std::string& lowered_name) const = 0;
    // Device memory, copies and timing for tools, tests and benchmarks; engines bring
    // their own; the runtime reads a batched call's indices back with download. Each throws
    // std::runtime_error naming the failed call. Uploads and fills are ordered with the
    // work of the default stream.
    virtual void* allocate(int device, std::size_t bytes) const = 0;
    virtual void release(int device, void* pointer) const = 0;
    virtual void upload(int device, void* destination, const void* source, std::size_t bytes) const = 0;
    // Waits for the work queued on stream (hipStream_t / CUstream, null for the default
    // stream) to reach the copy, so it sees what that work wrote; returns once it is done.
    virtual void download(int device, void* destination, const void* source, std::size_t bytes, void* stream) const = 0;
    // Sets bytes bytes from destination on to byte.
    virtual void fill(int device, void* destination, unsigned char byte, std::size_t bytes) const = 0;
    virtual std::unique_ptr<DeviceEvent> create_event(int device) const = 0;
    // Encodes a tensor map into map: empty on success, else why not (a backend or driver
    // without tensor maps, or a tensor they cannot describe), and a caller copies another way.
    virtual std::string encode_tensor_map(const TensorMapRequest&, TensorMap& map) const = 0;
    // Waits for all work queued on the device, and reports a failed kernel.
    virtual void synchronize(int device) const = 0;
};

// The backends compiled into this build, whether or not their libraries are present.
std::vector<std::unique_ptr<Backend>> make_backends();

// The backend that runs kernels: the first whose runtime sees a device. Null when none
// does; reasons then says why, per backend ("cuda: ...; hip: ...").
const Backend* running_backend(const std::vector<std::unique_ptr<Backend>>& backends, std::string& reasons);

}  // namespace fajit
