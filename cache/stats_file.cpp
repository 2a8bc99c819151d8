#include "cache/stats_file.hpp"

#include <chrono>
#include <cstdint>
#include <exception>
#include <span>
#include <string>

#include "cache/atomic_file.hpp"
#include "cache/file_reading.hpp"
#include "cache/lock_file.hpp"

namespace fajit::cache {

namespace {

// Updates take microseconds; waiting longer than this means something is wrong, and the
// counts can simply be flushed next time.
constexpr std::chrono::milliseconds lock_wait{500};
constexpr std::chrono::milliseconds lock_stale_after{10'000};
// Far more than the counters' JSON; a larger file is not one this code wrote, and reads as none.
constexpr std::uint64_t stats_file_limit = 64 << 10;

}  // namespace

CacheStats read_stats_file(const std::filesystem::path& path) {
    std::error_code error;
    const auto bytes = read_file(path, error, stats_file_limit);
    if (!bytes) return {};
    const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    return stats_from_json(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false));
}

bool update_stats_file(const std::filesystem::path& path, const std::function<CacheStats(CacheStats)>& update) {
    try {
        std::filesystem::create_directories(path.parent_path());
        LockFile lock(path.string() + ".lock", lock_stale_after);
        const auto outcome = lock.acquire(lock_wait);
        if (outcome != LockFile::Outcome::acquired && outcome != LockFile::Outcome::acquired_after_waiting)
            return false;
        const std::string text = to_json(update(read_stats_file(path))).dump(2) + "\n";
        AtomicFile file(path);
        file.write(std::as_bytes(std::span(text)));
        file.commit();
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace fajit::cache
