// pack and unpack in a build without libarchive (FAJIT_FLEET_CACHE off): they say why not.
#include "cache/cache_archive.hpp"

namespace fajit::cache {

namespace {

[[noreturn]] void unavailable() {
    throw ArchiveError("this fa-jit was built without libarchive (FAJIT_FLEET_CACHE off): no pack archives");
}

}  // namespace

PackResult pack_cache(const DiskCache&, const std::filesystem::path&, const PackFilter&) { unavailable(); }

UnpackResult unpack_cache(DiskCache&, const std::filesystem::path&) { unavailable(); }

}  // namespace fajit::cache
