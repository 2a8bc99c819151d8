#include "runtime/split_workspaces.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fajit {
namespace {

// Grows by doubling, so a batch that creeps up reallocates a few times, not per call.
std::size_t grown(std::size_t have, std::size_t need) { return std::max(need, 2 * have); }

}  // namespace

SplitWorkspace SplitWorkspaces::get(const Backend& backend, int device, void* stream, const SplitPlan& plan) {
    SplitWorkspace workspace;
    workspace.num_splits = plan.num_splits;
    if (plan.num_splits <= 1) return workspace;
    std::lock_guard lock(mutex_);
    try {
        return grow(backend, device, stream, plan, workspace);
    } catch (const std::runtime_error& error) {
        // Allocating (and zeroing) is what a stream under CUDA-graph capture may not do.
        throw std::runtime_error(std::string("the split-KV workspace of this stream could not grow: ") + error.what() +
                                 " (under CUDA-graph capture, make one call of the shape on the capturing stream "
                                 "before capture)");
    }
}

SplitWorkspace SplitWorkspaces::grow(const Backend& backend, int device, void* stream, const SplitPlan& plan,
                                     SplitWorkspace workspace) {
    Workspace& buffers = by_stream_[{device, stream}];
    const std::size_t partial_bytes = plan.partial_floats * sizeof(float);
    if (!buffers.partials || buffers.partials->size() < partial_bytes) {
        const std::size_t bytes = grown(buffers.partials ? buffers.partials->size() : 0, partial_bytes);
        if (buffers.partials) retired_.push_back(std::move(buffers.partials));
        buffers.partials = std::make_unique<DeviceBuffer>(backend, device, bytes);
    }
    const std::size_t arrival_bytes = plan.arrival_counters * sizeof(unsigned int);
    if (!buffers.arrivals || buffers.arrivals->size() < arrival_bytes) {
        const std::size_t bytes = grown(buffers.arrivals ? buffers.arrivals->size() : 0, arrival_bytes);
        auto zeroed = std::make_unique<DeviceBuffer>(backend, device, bytes);
        zeroed->fill(0);
        // The fill is ordered with the default stream only; the launch may be on another.
        backend.synchronize(device);
        // Kept only once zeroed: a buffer whose fill failed would look big enough to the next
        // call, which would launch on whatever its counters held.
        if (buffers.arrivals) retired_.push_back(std::move(buffers.arrivals));
        buffers.arrivals = std::move(zeroed);
    }
    workspace.partials = static_cast<float*>(buffers.partials->get());
    workspace.arrivals = static_cast<unsigned int*>(buffers.arrivals->get());
    return workspace;
}

}  // namespace fajit
