#include "support/fake_backend.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "spec/arch.hpp"

namespace fajit {
namespace {

bool contains_any(const std::string& text, const std::vector<std::string>& needles) {
    for (const auto& needle : needles)
        if (text.find(needle) != std::string::npos) return true;
    return false;
}

class FakeKernel : public LoadedKernel {
public:
    FakeKernel(std::shared_ptr<FakeBackendCounters> counters, int clusters_held)
        : counters_(std::move(counters)), clusters_held_(clusters_held) {}
    ~FakeKernel() override {
        counters_->unloads.fetch_add(1);
        if (counters_->queued_launches > 0) counters_->unloads_with_work_queued.fetch_add(1);
    }
    std::string launch(const LaunchShape& shape, const void* argument, std::size_t argument_bytes, void*) override {
        counters_->launches.fetch_add(1, std::memory_order_relaxed);
        counters_->queued_launches.fetch_add(1, std::memory_order_relaxed);
        if (!counters_->record_arguments) return {};
        const auto* bytes = static_cast<const std::byte*>(argument);
        std::lock_guard lock(counters_->launch_mutex);
        counters_->last_arguments.assign(bytes, bytes + argument_bytes);
        counters_->last_shape = shape;
        return {};
    }
    int clusters_held(const LaunchShape& shape) override {
        return shape.cluster_blocks >= 2 && shape.cluster_blocks <= 16 ? clusters_held_ : 0;
    }

private:
    std::shared_ptr<FakeBackendCounters> counters_;
    int clusters_held_;
};

// Host time stands in for device time: fake kernels take none.
class FakeEvent : public DeviceEvent {
public:
    void record(void*) override { time_ = std::chrono::steady_clock::now(); }
    float milliseconds_since(const DeviceEvent& earlier) const override {
        const auto* start = dynamic_cast<const FakeEvent*>(&earlier);
        if (!start) throw std::invalid_argument("milliseconds_since: the earlier event is not a fake event");
        return std::chrono::duration<float, std::milli>(time_ - start->time_).count();
    }

private:
    std::chrono::steady_clock::time_point time_;
};

class FakeBackend : public Backend {
public:
    FakeBackend(FakeBackendConfig config, std::shared_ptr<FakeBackendCounters> counters)
        : config_(std::move(config)), counters_(std::move(counters)) {}

    std::string_view name() const override { return "fake"; }
    bool targets(std::string_view arch) const override { return vendor_of(arch) == vendor_of(config_.arch); }
    std::string compiler_unavailable_reason() const override { return {}; }
    std::string runtime_unavailable_reason() const override {
        return config_.device_count > 0 ? std::string() : std::string("the fake backend has no device");
    }
    std::string compiler_identity() const override { return "fake-compiler-1"; }

    CompileResult compile(const CompileRequest& request) const override {
        counters_->compiles.fetch_add(1);
        CompileResult result;
        if (contains_any(request.program_name, config_.failing_compiles)) {
            result.log = request.program_name +
                         ":1:1: error: the fake compiler refuses this family\n"
                         "second line of the log\n";
            result.rejected = true;
            return result;
        }
        if (contains_any(request.program_name, config_.out_of_memory_compiles)) {
            result.log = "fakertcCompileProgram: out of memory";
            return result;
        }
        result.ok = true;
        for (char c : request.program_name) result.code.push_back(static_cast<std::byte>(c));
        result.lowered_names = {request.name_expressions.at(0)};
        return result;
    }

    std::vector<DeviceInfo> devices() const override {
        std::vector<DeviceInfo> found;
        for (int ordinal = 0; ordinal < config_.device_count; ++ordinal)
            found.push_back({ordinal, "fake device", config_.arch, 100, 64 * 1024});
        return found;
    }

    std::unique_ptr<LoadedKernel> load(int, std::span<const std::byte>,
                                       const std::string& lowered_name) const override {
        counters_->loads.fetch_add(1);
        if (contains_any(lowered_name, config_.failing_loads))
            throw CodeRejected("the fake loader refuses " + lowered_name);
        if (out_of_memory_loads_left_.fetch_sub(1) > 0) throw std::runtime_error("the fake loader is out of memory");
        return std::make_unique<FakeKernel>(counters_, config_.clusters_held);
    }

    // Host memory stands in for device memory: fake kernels never touch it. An ordinal the
    // backend does not have fails as the real ones do, when they make its context current.
    void* allocate(int device, std::size_t bytes) const override {
        require_device(device);
        return ::operator new(bytes);
    }
    void release(int, void* pointer) const override {
        ::operator delete(pointer);
        if (config_.failing_releases) throw std::runtime_error("the fake runtime refuses to free");
    }
    void upload(int device, void* destination, const void* source, std::size_t bytes) const override {
        require_device(device);
        std::memcpy(destination, source, bytes);
    }
    void download(int device, void* destination, const void* source, std::size_t bytes, void*) const override {
        require_device(device);
        std::memcpy(destination, source, bytes);
    }
    void fill(int device, void* destination, unsigned char byte, std::size_t bytes) const override {
        require_device(device);
        if (counters_->fills.fetch_add(1) < config_.failing_fills) throw std::runtime_error("the fake fill failed");
        std::memset(destination, byte, bytes);
    }
    std::unique_ptr<DeviceEvent> create_event(int) const override { return std::make_unique<FakeEvent>(); }
    std::string encode_tensor_map(const TensorMapRequest& request, TensorMap& map) const override {
        if (!config_.tensor_maps) return "the fake backend has no tensor maps";
        static_assert(sizeof request <= sizeof map);
        map = {};
        std::memcpy(map.data(), &request, sizeof request);
        counters_->tensor_maps.fetch_add(1);
        return {};
    }
    void synchronize(int) const override { counters_->queued_launches = 0; }

private:
    void require_device(int device) const {
        if (device < 0 || device >= config_.device_count)
            throw std::runtime_error("the fake backend has no device " + std::to_string(device));
    }

    FakeBackendConfig config_;
    mutable std::atomic<int> out_of_memory_loads_left_{config_.out_of_memory_loads};
    std::shared_ptr<FakeBackendCounters> counters_;
};

}  // namespace

std::unique_ptr<Backend> make_fake_backend(FakeBackendConfig config, std::shared_ptr<FakeBackendCounters> counters) {
    return std::make_unique<FakeBackend>(std::move(config), std::move(counters));
}

}  // namespace fajit
