#include "cache/file_reading.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <new>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fajit::cache {

namespace {

class FileRefusalCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "fa-jit file reading"; }
    std::string message(int value) const override {
        switch (static_cast<FileRefusal>(value)) {
            case FileRefusal::not_a_regular_file:
                return "not a regular file";
            case FileRefusal::too_large:
                return "larger than a file of its kind may be";
        }
        return "unknown refusal";
    }
};

// Reads up to `limit` bytes; with whole_file, a file longer than limit is refused instead.
std::optional<std::vector<std::byte>> read_bounded(const std::filesystem::path& path, std::error_code& error,
                                                   std::uint64_t limit, bool whole_file) {
    error.clear();
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        error.assign(errno, std::generic_category());
        return std::nullopt;
    }
    const auto refuse = [&](std::error_code why) {
        error = why;
        ::close(fd);
        return std::nullopt;
    };
    struct stat status {};
    if (::fstat(fd, &status) != 0) return refuse({errno, std::generic_category()});
    if (!S_ISREG(status.st_mode)) return refuse(FileRefusal::not_a_regular_file);
    const auto size = static_cast<std::uint64_t>(status.st_size);
    if (whole_file && size > limit) return refuse(FileRefusal::too_large);
    std::vector<std::byte> bytes;
    try {
        bytes.reserve(static_cast<std::size_t>(std::min(limit, size)));
        // Read until EOF rather than trusting st_size, which can be stale on network file
        // systems; a whole file one byte past the limit, to tell one that grew beyond it.
        const std::uint64_t wanted =
            whole_file && limit < std::numeric_limits<std::uint64_t>::max() ? limit + 1 : limit;
        std::byte buffer[64 * 1024];
        while (bytes.size() < wanted) {
            const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buffer, wanted - bytes.size()));
            const ssize_t count = ::read(fd, buffer, chunk);
            if (count == 0) break;
            if (count < 0) {
                if (errno == EINTR) continue;
                return refuse({errno, std::generic_category()});
            }
            bytes.insert(bytes.end(), buffer, buffer + count);
        }
    } catch (const std::bad_alloc&) {
        return refuse(std::make_error_code(std::errc::not_enough_memory));
    }
    ::close(fd);
    if (bytes.size() > limit) {
        error = FileRefusal::too_large;
        return std::nullopt;
    }
    return bytes;
}

}  // namespace

std::error_code make_error_code(FileRefusal refusal) {
    static const FileRefusalCategory category;
    return {static_cast<int>(refusal), category};
}

std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& path, std::error_code& error,
                                                std::uint64_t max_size) {
    return read_bounded(path, error, max_size, true);
}

std::optional<std::vector<std::byte>> read_file_prefix(const std::filesystem::path& path, std::error_code& error,
                                                       std::size_t size) {
    return read_bounded(path, error, size, false);
}

}  // namespace fajit::cache
