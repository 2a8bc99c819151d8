#include "cache/stats.hpp"

#include <tuple>
#include <type_traits>
#include <utility>

namespace fajit::cache {

namespace {

// One list of fields for +=, to_json and stats_from_json, so adding a counter cannot miss one of them.
constexpr auto counters = std::make_tuple(
    std::pair{"hits", &CacheStats::hits}, std::pair{"misses", &CacheStats::misses},
    std::pair{"compiles", &CacheStats::compiles}, std::pair{"compile_seconds", &CacheStats::compile_seconds},
    std::pair{"corrupt_entries", &CacheStats::corrupt_entries}, std::pair{"evictions", &CacheStats::evictions},
    std::pair{"rejected_entries", &CacheStats::rejected_entries}, std::pair{"lock_waits", &CacheStats::lock_waits},
    std::pair{"lock_timeouts", &CacheStats::lock_timeouts},
    std::pair{"publish_failures", &CacheStats::publish_failures}, std::pair{"remote_hits", &CacheStats::remote_hits},
    std::pair{"remote_misses", &CacheStats::remote_misses}, std::pair{"remote_errors", &CacheStats::remote_errors},
    std::pair{"remote_rejected", &CacheStats::remote_rejected},
    std::pair{"remote_bytes_read", &CacheStats::remote_bytes_read},
    std::pair{"remote_bytes_written", &CacheStats::remote_bytes_written},
    std::pair{"remote_lock_waits", &CacheStats::remote_lock_waits},
    std::pair{"remote_lock_timeouts", &CacheStats::remote_lock_timeouts});

template <typename Visitor>
void for_each_counter(Visitor&& visit) {
    std::apply([&](const auto&... counter) { (visit(counter.first, counter.second), ...); }, counters);
}

}  // namespace

CacheStats& CacheStats::operator+=(const CacheStats& other) {
    for_each_counter([&](const char*, auto member) { this->*member += other.*member; });
    return *this;
}

nlohmann::json to_json(const CacheStats& stats) {
    nlohmann::json json = nlohmann::json::object();
    for_each_counter([&](const char* name, auto member) { json[name] = stats.*member; });
    return json;
}

CacheStats stats_from_json(const nlohmann::json& json) {
    CacheStats stats;
    if (!json.is_object()) return stats;
    for_each_counter([&](const char* name, auto member) {
        using Value = std::remove_reference_t<decltype(stats.*member)>;
        const auto field = json.find(name);
        if (field != json.end() && field->is_number()) stats.*member = field->template get<Value>();
    });
    return stats;
}

}  // namespace fajit::cache
