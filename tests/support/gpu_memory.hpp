#pragma once
// Device memory for GPU tests. The library exposes no allocator (engines own their
// memory), so tests open the CUDA driver themselves, the way an engine would.
#include <cstddef>
#include <string>
#include <vector>

namespace fajit::testing {

class CudaTestDevice {
public:
    // Why tests needing a device must skip; empty when a CUDA device is usable.
    static std::string unavailable_reason();
    static CudaTestDevice& instance();

    void* allocate(std::size_t bytes);
    void free(void* pointer);
    void upload(void* device, const void* host, std::size_t bytes);
    void download(void* host, const void* device, std::size_t bytes);
    void fill(void* device, unsigned char byte, std::size_t bytes);
    void synchronize();

private:
    CudaTestDevice();
};

// RAII device buffer.
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return pointer_; }
    std::size_t size() const { return bytes_; }

    template <class T>
    void upload(const std::vector<T>& host) {
        CudaTestDevice::instance().upload(pointer_, host.data(), host.size() * sizeof(T));
    }
    template <class T>
    std::vector<T> download() const {
        std::vector<T> host(bytes_ / sizeof(T));
        CudaTestDevice::instance().download(host.data(), pointer_, bytes_);
        return host;
    }

private:
    void* pointer_;
    std::size_t bytes_;
};

}  // namespace fajit::testing
