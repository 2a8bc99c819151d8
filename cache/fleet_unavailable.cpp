// What a build without hiredis and libcrypto (FAJIT_FLEET_CACHE off) does when asked for a
// remote tier: it says why there is none, and the local cache carries on.
#include "cache/remote_storage.hpp"
#include "cache/remote_value.hpp"

namespace fajit::cache {

namespace {

[[noreturn]] void unavailable() {
    throw RemoteError("this fa-jit was built without the fleet cache (hiredis and libcrypto were not found)");
}

}  // namespace

std::unique_ptr<RemoteStorage> connect_remote_storage(const RemoteAddress&, const RemoteTimeouts&) { unavailable(); }

std::vector<std::byte> seal_remote_value(std::string_view, std::span<const std::byte>, std::string_view) {
    unavailable();
}

UnsealedValue unseal_remote_value(std::string_view, std::span<const std::byte>, std::string_view) { unavailable(); }

}  // namespace fajit::cache
