#pragma once
// A device allocation of one backend, released on every path, with typed copies: the
// runtime's split-KV workspaces, and tools, tests and benchmarks.
#include <cstddef>
#include <vector>

#include "backend/backend.hpp"

namespace fajit {

class DeviceBuffer {
public:
    // Throws std::runtime_error naming the failed call.
    DeviceBuffer(const Backend&, int device, std::size_t bytes);
    // Logs a failed release; never throws.
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return pointer_; }
    std::size_t size() const { return bytes_; }

    // Copies host values to the start of the buffer; throws std::length_error when they do not fit.
    template <class T>
    void upload(const std::vector<T>& host) {
        upload_bytes(host.data(), host.size() * sizeof(T));
    }
    // The whole buffer, as values of T.
    template <class T>
    std::vector<T> download() const {
        std::vector<T> host(bytes_ / sizeof(T));
        download_bytes(host.data(), host.size() * sizeof(T));
        return host;
    }
    // Sets every byte of the buffer to byte.
    void fill(unsigned char byte);

private:
    void upload_bytes(const void* host, std::size_t bytes);
    void download_bytes(void* host, std::size_t bytes) const;

    const Backend& backend_;
    int device_;
    std::size_t bytes_;
    void* pointer_;
};

}  // namespace fajit
