#pragma once
// What the fleet cache's tests share: caches that use one real server, and a counting fake
// compiler whose log the parent reads to count compiles across processes.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "cache/disk_cache.hpp"
#include "cache/remote_storage.hpp"
#include "test_support.hpp"

namespace fajit::cache::testing {

inline constexpr std::string_view test_arch = "gfx942:sramecc+:xnack-";
inline constexpr std::string_view other_arch = "sm_90a";

struct RemoteSettings {
    std::string url;
    std::string signing_key;
    std::chrono::milliseconds connect_timeout{300};
    std::chrono::milliseconds operation_timeout{300};
    std::chrono::milliseconds backoff{std::chrono::seconds(30)};
};

// A disk cache at root in front of the server at settings.url.
DiskCacheConfig remote_config_at(const std::filesystem::path& root, const CapturedLog& log,
                                 const RemoteSettings& settings);

// The store itself, to look at and change what the caches put there.
std::unique_ptr<RemoteStorage> raw_store(const std::string& url);

// The entry the fake compiler makes for seed on arch, with the metadata fields a fetch requires.
Entry compiled_entry(std::string_view arch, std::string_view seed);
nlohmann::json required_for(std::string_view arch);

// The fake compiler: one O_APPEND line per compile, then `takes` of work, then compiled_entry.
Entry compile_and_record(const std::filesystem::path& compile_log, std::string_view arch, std::string_view seed,
                         std::chrono::milliseconds takes);

// get_or_create through the fake compiler.
Entry request(DiskCache& cache, const std::filesystem::path& compile_log, std::string_view arch, std::string_view seed,
              std::chrono::milliseconds takes = std::chrono::milliseconds(5));

// How often each seed was compiled, from the log.
std::map<std::string, int> compiles_in(const std::filesystem::path& compile_log);

}  // namespace fajit::cache::testing
