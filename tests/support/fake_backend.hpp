#pragma once
// A backend with no GPU: it "compiles" by copying the program name, "loads" by
// remembering it and "launches" by counting. It runs the library's host path (argument
// checks, selection, fallback, caches) where no device exists, for tests and benchmarks.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace fajit {

struct FakeBackendCounters {
    std::atomic<int> compiles{0};
    std::atomic<int> loads{0};
    std::atomic<long long> launches{0};
    std::atomic<int> unloads{0};      // kernels destroyed
    // Launches since the last synchronize: work a real device could still have queued.
    std::atomic<long long> queued_launches{0};
    std::atomic<int> unloads_with_work_queued{0};  // kernels destroyed while launches were queued
    std::atomic<int> tensor_maps{0};  // maps encoded
    std::atomic<int> fills{0};        // fill calls, failed ones included
    // With record_arguments, the argument bytes (KernelArguments) and shape of the latest
    // launch, for tests that read them; off, a launch only counts (the dispatch benchmark
    // times it).
    std::atomic<bool> record_arguments{false};
    std::mutex launch_mutex;
    std::vector<std::byte> last_arguments;
    LaunchShape last_shape;
};

struct FakeBackendConfig {
    std::string arch = "sm_90a";  // what its one device reports
    int device_count = 1;         // 0: the runtime finds no device
    // A compile or load fails when the program name (fajit_<family>.cu) or the kernel name
    // contains one of these: the compiler or loader rejects the code.
    std::vector<std::string> failing_compiles;
    std::vector<std::string> failing_loads;
    // Failures that say nothing about the code: compiles of these programs run out of
    // memory, and so do the next out_of_memory_loads loads.
    std::vector<std::string> out_of_memory_compiles;
    int out_of_memory_loads = 0;
    bool failing_releases = false;  // release frees the memory, then reports a failure
    int failing_fills = 0;          // the first this many fills write nothing and fail
    // Whether it encodes tensor maps; an encoded map holds the TensorMapRequest's bytes.
    bool tensor_maps = true;
    // How many clusters of 2 to 16 blocks its device runs at once (0: none, as on a GPU
    // without clusters).
    int clusters_held = 0;
};

std::unique_ptr<Backend> make_fake_backend(FakeBackendConfig, std::shared_ptr<FakeBackendCounters>);

}  // namespace fajit
