#pragma once
// Device memory for the partial results of split-KV launches, one workspace per (device,
// stream): launches on one stream run in order and may share it, launches on two streams
// may overlap and must not. A workspace only grows; a replaced one is kept until the
// runtime goes, since a launch still queued may be using it.
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/device_buffer.hpp"
#include "families/family_descriptor.hpp"
#include "runtime/kernel_arguments.hpp"

namespace fajit {

class SplitWorkspaces {
public:
    // The workspace for plan's launch on stream. Its arrival counters are zero, as every
    // split launch leaves them. Throws std::runtime_error when it must grow and cannot:
    // device memory ran out, or the stream is under CUDA-graph capture.
    SplitWorkspace get(const Backend& backend, int device, void* stream, const SplitPlan& plan);

private:
    // get's work, under mutex_; workspace holds the plan's split count.
    SplitWorkspace grow(const Backend& backend, int device, void* stream, const SplitPlan& plan,
                        SplitWorkspace workspace);
    struct Workspace {
        std::unique_ptr<DeviceBuffer> partials, arrivals;
    };
    std::mutex mutex_;
    std::map<std::pair<int, void*>, Workspace> by_stream_;
    std::vector<std::unique_ptr<DeviceBuffer>> retired_;
};

}  // namespace fajit
