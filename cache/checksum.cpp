#include "cache/checksum.hpp"

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

namespace fajit::cache {

Digest128 xxh3_128(std::span<const std::byte> bytes) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data(), bytes.size()));
    Digest128 digest;
    static_assert(sizeof canonical.digest == sizeof digest);
    std::memcpy(digest.data(), canonical.digest, digest.size());
    return digest;
}

std::optional<std::uint64_t> xxh3_64_of_file(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    std::vector<char> buffer(1 << 20);
    for (;;) {
        const ssize_t count = ::read(fd, buffer.data(), buffer.size());
        if (count == 0) break;
        if (count < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            return std::nullopt;
        }
        XXH3_64bits_update(state.get(), buffer.data(), static_cast<std::size_t>(count));
    }
    ::close(fd);
    return XXH3_64bits_digest(state.get());
}

}  // namespace fajit::cache
