#include "cache/checksum.hpp"

#include <cstring>

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

}  // namespace fajit::cache
