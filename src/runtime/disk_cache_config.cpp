#include "runtime/disk_cache_config.hpp"

#include <spdlog/spdlog.h>

#include "cache/remote_storage.hpp"

namespace fajit {

cache::DiskCacheConfig disk_cache_config(const Options& options) {
    cache::DiskCacheConfig config;
    config.root = options.cache_dir;
    config.max_bytes = options.cache_max_bytes;
    config.enabled = !options.cache_disabled && !options.cache_dir.empty();
    if (options.remote_cache.empty()) return config;
    try {
        cache::RemoteTierConfig remote;
        remote.storage =
            cache::connect_remote_storage(cache::parse_remote_address(options.remote_cache),
                                          {options.remote_connect_timeout, options.remote_operation_timeout});
        remote.signing_key = options.remote_cache_key;
        remote.backoff = options.remote_backoff;
        config.remote = std::move(remote);
    } catch (const cache::RemoteError& error) {
        spdlog::warn("FAJIT_REMOTE_CACHE={}: {}; using the local cache only", options.remote_cache, error.what());
    }
    return config;
}

}  // namespace fajit
