#pragma once
// The device the GPU suites run on, reached only through the library's Backend interface,
// so a suite runs unchanged on whichever backend's device is present (HIP or CUDA).
#include <cstddef>
#include <string>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"

namespace fajit::testing {

// Why tests needing a device must skip here; empty when a backend of this build sees one.
std::string test_device_unavailable_reason();
// The backend that runs kernels, chosen as the library's Runtime chooses it. Throws
// std::runtime_error with the reason above when there is none.
const Backend& test_backend();
// The tests run on the first device, as AttentionArgs does by default.
inline constexpr int test_device = 0;

DeviceBuffer device_buffer(std::size_t bytes);
// Waits for the device's queued work; throws naming a failed kernel.
void synchronize_test_device();

}  // namespace fajit::testing
