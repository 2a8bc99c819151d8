#include "cache/file_reading.hpp"

#include <algorithm>
#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fajit::cache {

std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& path, std::error_code& error,
                                                std::size_t limit) {
    error.clear();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error.assign(errno, std::generic_category());
        return std::nullopt;
    }
    std::vector<std::byte> bytes;
    struct stat status {};
    if (::fstat(fd, &status) == 0 && status.st_size > 0) {
        bytes.reserve(std::min(limit, static_cast<std::size_t>(status.st_size)));
    }
    // Read until EOF rather than trusting st_size, which can be stale on network file systems.
    std::byte buffer[64 * 1024];
    while (bytes.size() < limit) {
        const ssize_t count = ::read(fd, buffer, std::min(sizeof buffer, limit - bytes.size()));
        if (count == 0) break;
        if (count < 0) {
            if (errno == EINTR) continue;
            error.assign(errno, std::generic_category());
            ::close(fd);
            return std::nullopt;
        }
        bytes.insert(bytes.end(), buffer, buffer + count);
    }
    ::close(fd);
    return bytes;
}

}  // namespace fajit::cache
