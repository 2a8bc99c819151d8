// DiskCache's failure records: the request-path side (find, record); listing, verifying and
// clearing them live with the other maintenance in disk_cache_maintenance.cpp.
#include <exception>

#include <spdlog/spdlog.h>

#include "cache/atomic_file.hpp"
#include "cache/disk_cache.hpp"
#include "cache/failure_record.hpp"

namespace fajit::cache {

namespace fs = std::filesystem;

fs::path DiskCache::failure_path(std::string_view arch, const Key& key) const {
    return layout_.failure_path(arch, key);
}

std::optional<nlohmann::json> DiskCache::find_failure(std::string_view arch, const Key& key) {
    if (!config_.enabled) return std::nullopt;
    const fs::path path = layout_.failure_path(arch, key);
    const auto bytes = read_stored(path, "failure record");
    if (!bytes) return std::nullopt;
    FailureDecodeResult decoded = decode_failure_record(*bytes);
    if (!decoded.details) {
        // Forgetting a failure costs one more attempt; trusting a damaged one could skip work for good.
        discard_corrupt(path, "failure record", decoded.error);
        return std::nullopt;
    }
    return std::move(decoded.details);
}

bool DiskCache::record_failure(std::string_view arch, const Key& key, const nlohmann::json& details) {
    if (!config_.enabled) return false;
    const fs::path path = layout_.failure_path(arch, key);
    try {
        const std::vector<std::byte> bytes = encode_failure_record(details);
        fs::create_directories(path.parent_path());
        AtomicFile file(path);
        file.write(bytes);
        file.commit();
        return true;
    } catch (const std::exception& error) {
        warn_storage_problem_once("cannot store " + path.string() + ": " + error.what());
        return false;
    }
}

}  // namespace fajit::cache
