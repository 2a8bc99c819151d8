#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

namespace fajit::cache {

// The one place that names the hash function, so keys and entry checksums cannot drift apart.
using Digest128 = std::array<std::uint8_t, 16>;

// XXH3-128 in xxHash's canonical (big-endian) byte order, the same bytes `xxh128sum` prints.
Digest128 xxh3_128(std::span<const std::byte> bytes);

// XXH3-64 (seed 0) of a file's bytes, read in pieces so large libraries need little memory;
// nullopt if it cannot be read.
std::optional<std::uint64_t> xxh3_64_of_file(const std::filesystem::path& path);

}  // namespace fajit::cache
