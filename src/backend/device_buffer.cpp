#include "backend/device_buffer.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>

namespace fajit {

// Not every runtime hands out a pointer for zero bytes (cuMemAlloc refuses them), so an
// empty buffer still takes one byte.
DeviceBuffer::DeviceBuffer(const Backend& backend, int device, std::size_t bytes)
    : backend_(backend), device_(device), bytes_(bytes), pointer_(backend.allocate(device, bytes ? bytes : 1)) {}

DeviceBuffer::~DeviceBuffer() {
    try {
        backend_.release(device_, pointer_);
    } catch (const std::exception& error) {
        spdlog::warn("releasing a device buffer of {} bytes: {}", bytes_, error.what());
    }
}

void DeviceBuffer::upload_bytes(const void* host, std::size_t bytes) {
    if (bytes > bytes_)
        throw std::length_error("uploading " + std::to_string(bytes) + " bytes into a device buffer of " +
                                std::to_string(bytes_));
    backend_.upload(device_, pointer_, host, bytes);
}

void DeviceBuffer::download_bytes(void* host, std::size_t bytes) const {
    backend_.download(device_, host, pointer_, bytes, nullptr);
}

void DeviceBuffer::fill(unsigned char byte) { backend_.fill(device_, pointer_, byte, bytes_); }

}  // namespace fajit
