#include "support/test_device.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

namespace fajit::testing {
namespace {

struct RunningBackend {
    std::vector<std::unique_ptr<Backend>> backends = make_backends();
    std::string reasons;
    const Backend* backend = running_backend(backends, reasons);
};

const RunningBackend& running() {
    static const RunningBackend instance;
    return instance;
}

}  // namespace

std::string test_device_unavailable_reason() {
    const RunningBackend& found = running();
    if (found.backend) return {};
    return found.backends.empty() ? "this build has no GPU backend" : found.reasons;
}

const Backend& test_backend() {
    if (const Backend* backend = running().backend) return *backend;
    throw std::runtime_error("no GPU device for the tests: " + test_device_unavailable_reason());
}

DeviceBuffer device_buffer(std::size_t bytes) { return DeviceBuffer(test_backend(), test_device, bytes); }

void synchronize_test_device() { test_backend().synchronize(test_device); }

}  // namespace fajit::testing
