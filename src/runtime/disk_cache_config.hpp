#pragma once
// The kernel cache's configuration from fajit::Options, remote tier included: one place, for
// the library and the command-line tool alike.
#include "cache/disk_cache.hpp"
#include "fajit/options.hpp"

namespace fajit {

// A remote tier that cannot be set up (a build without the fleet cache) is warned about and
// left out: the disk cache works without it.
cache::DiskCacheConfig disk_cache_config(const Options& options);

}  // namespace fajit
