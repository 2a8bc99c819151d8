#pragma once
// The store a fleet of machines shares behind their local disk caches (README "Fleet cache").
// One interface, in the manner of ccache's remote storage backends; Redis is its one
// implementation (redis_storage.cpp). It moves bytes and nothing else: what the bytes mean,
// and whether to trust them, is the remote tier's business (remote_tier.hpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fajit::cache {

// An operation on the store that failed or ran past its timeout. The remote tier counts it
// and carries on with the local cache.
class RemoteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where the store is: redis://host[:port][/db] or unix:///path/to/socket[?db=N].
struct RemoteAddress {
    std::string host;  // empty for a unix socket
    int port = 6379;
    std::string socket_path;  // empty for TCP
    int database = 0;
};

// Throws std::invalid_argument saying what in the text is wrong.
RemoteAddress parse_remote_address(std::string_view text);
std::string to_string(const RemoteAddress& address);

// Every operation waits at most connect (to open a connection, when it needs one) plus
// operation (for the reply).
struct RemoteTimeouts {
    std::chrono::milliseconds connect{500};
    std::chrono::milliseconds operation{1000};
};

struct RemoteValueInfo {
    std::string name;
    std::uint64_t size = 0;
};

// Safe to call from several threads. Every operation throws RemoteError on failure.
class RemoteStorage {
public:
    virtual ~RemoteStorage() = default;

    virtual std::optional<std::vector<std::byte>> get(const std::string& name) = 0;
    virtual void put(const std::string& name, std::span<const std::byte> value) = 0;
    // Takes the lock `name` for ttl if nobody holds it, with token as its owner's mark. A
    // lock held without an expiry (not one try_lock set) is given ttl, so it lapses.
    virtual bool try_lock(const std::string& name, const std::string& token, std::chrono::milliseconds ttl) = 0;
    // Extends the lock by ttl if token still holds it; false if it expired or another took it.
    virtual bool refresh_lock(const std::string& name, const std::string& token, std::chrono::milliseconds ttl) = 0;
    // Releases the lock if token still holds it.
    virtual void unlock(const std::string& name, const std::string& token) = 0;
    // Every value whose name starts with prefix.
    virtual std::vector<RemoteValueInfo> list(const std::string& prefix) = 0;
    // Returns how many of names existed.
    virtual std::uint64_t remove(const std::vector<std::string>& names) = 0;
};

// Connects lazily, on the first operation, so creating it never waits. Throws RemoteError
// if this build has no client for the store.
std::unique_ptr<RemoteStorage> connect_remote_storage(const RemoteAddress& address, const RemoteTimeouts& timeouts);

}  // namespace fajit::cache
