#pragma once
// One file holding (part of) a cache, for an image build to copy in: a zstd-compressed tar
// whose first member, manifest.json, lists every entry it holds (cache/FORMAT.md, "Pack
// archive"). Written and read with libarchive.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/disk_cache.hpp"

namespace fajit::cache {

// An archive that cannot be written, or read back whole and sound; the message says what is wrong.
class ArchiveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Which entries go into an archive: those of arch (every arch if unset) whose metadata has every
// field of metadata with the same value.
struct PackFilter {
    std::optional<std::string> arch;
    nlohmann::json metadata = nlohmann::json::object();
};

struct PackResult {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;            // of the entries, uncompressed
    std::uint64_t skipped_damaged = 0;  // entries that failed their checks (or name another arch) and were left out
};

// Writes the archive under a temporary name and renames it into place, so a failed pack leaves
// no partial file at `archive`. Throws ArchiveError, writing nothing, when no sound entry
// passes the filter.
PackResult pack_cache(const DiskCache& cache, const std::filesystem::path& archive, const PackFilter& filter);

struct UnpackResult {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    std::uint64_t not_stored = 0;  // sound entries the cache could not store (full, read-only, ...)
};

// Reads and checks the whole archive (the manifest, then every member against it and against
// the entry format, and that its metadata names the arch it is listed under) before storing
// anything: a damaged archive throws ArchiveError, naming what is wrong, and leaves the cache
// as it was. A listed entry larger than the cache's max_bytes is refused before it is read.
UnpackResult unpack_cache(DiskCache& cache, const std::filesystem::path& archive);

}  // namespace fajit::cache
