// RemoteStorage over Redis, with hiredis's blocking API. Each operation borrows a connection
// from a small pool (or opens one), so threads never queue behind each other's replies, and
// a connection that failed is dropped rather than reused in an unknown state.
#include <hiredis/hiredis.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/remote_storage.hpp"

namespace fajit::cache {

namespace {

// Takes a lock for ttl if it is free. A lock without an expiry can only have been set by
// hand or by another tool (try_lock always gives one); it is given ttl here, so that it
// lapses instead of holding every waiter for its whole wait limit.
constexpr std::string_view lock_script =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
    "if redis.call('pttl', KEYS[1]) == -1 then redis.call('pexpire', KEYS[1], ARGV[2]) end "
    "return 0";
// Compare-and-act on a lock: only the owner that set token may extend or release it.
constexpr std::string_view refresh_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
constexpr std::string_view unlock_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
constexpr std::size_t idle_connections_kept = 8;
constexpr std::size_t names_per_delete = 500;

struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
};
using Connection = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval to_timeval(std::chrono::milliseconds duration) {
    return {static_cast<time_t>(duration.count() / 1000), static_cast<suseconds_t>(duration.count() % 1000 * 1000)};
}

// SCAN's MATCH is a glob; the prefix is matched literally.
std::string glob_of_prefix(const std::string& prefix) {
    std::string glob;
    for (const char c : prefix) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') glob += '\\';
        glob += c;
    }
    return glob + '*';
}

class RedisStorage final : public RemoteStorage {
public:
    RedisStorage(RemoteAddress address, RemoteTimeouts timeouts)
        : address_(std::move(address)), timeouts_(timeouts), description_(to_string(address_)) {}

    std::optional<std::vector<std::byte>> get(const std::string& name) override {
        const Reply reply = command({"GET", name});
        if (reply->type == REDIS_REPLY_NIL) return std::nullopt;
        expect(reply, REDIS_REPLY_STRING, "GET");
        const auto* bytes = reinterpret_cast<const std::byte*>(reply->str);
        return std::vector<std::byte>(bytes, bytes + reply->len);
    }

    void put(const std::string& name, std::span<const std::byte> value) override {
        const std::string_view bytes(reinterpret_cast<const char*>(value.data()), value.size());
        expect(command({"SET", name, bytes}), REDIS_REPLY_STATUS, "SET");
    }

    bool try_lock(const std::string& name, const std::string& token, std::chrono::milliseconds ttl) override {
        const Reply reply = command({"EVAL", lock_script, "1", name, token, std::to_string(ttl.count())});
        expect(reply, REDIS_REPLY_INTEGER, "EVAL");
        return reply->integer == 1;
    }

    bool refresh_lock(const std::string& name, const std::string& token, std::chrono::milliseconds ttl) override {
        const Reply reply = command({"EVAL", refresh_script, "1", name, token, std::to_string(ttl.count())});
        expect(reply, REDIS_REPLY_INTEGER, "EVAL");
        return reply->integer == 1;
    }

    void unlock(const std::string& name, const std::string& token) override {
        expect(command({"EVAL", unlock_script, "1", name, token}), REDIS_REPLY_INTEGER, "EVAL");
    }

    std::vector<RemoteValueInfo> list(const std::string& prefix) override {
        std::vector<RemoteValueInfo> values;
        const std::string glob = glob_of_prefix(prefix);
        std::string cursor = "0";
        do {
            const Reply reply = command({"SCAN", cursor, "MATCH", glob, "COUNT", "1000"});
            expect(reply, REDIS_REPLY_ARRAY, "SCAN");
            if (reply->elements != 2) throw RemoteError(description_ + ": malformed SCAN reply");
            cursor.assign(reply->element[0]->str, reply->element[0]->len);
            const redisReply* names = reply->element[1];
            for (std::size_t i = 0; i < names->elements; ++i)
                values.push_back({std::string(names->element[i]->str, names->element[i]->len), 0});
        } while (cursor != "0");
        for (RemoteValueInfo& value : values) {
            const Reply reply = command({"STRLEN", value.name});
            expect(reply, REDIS_REPLY_INTEGER, "STRLEN");
            value.size = static_cast<std::uint64_t>(reply->integer);
        }
        return values;
    }

    std::uint64_t remove(const std::vector<std::string>& names) override {
        std::uint64_t removed = 0;
        for (std::size_t first = 0; first < names.size(); first += names_per_delete) {
            std::vector<std::string_view> arguments{"DEL"};
            for (std::size_t i = first; i < std::min(names.size(), first + names_per_delete); ++i)
                arguments.push_back(names[i]);
            const Reply reply = command(arguments);
            expect(reply, REDIS_REPLY_INTEGER, "DEL");
            removed += static_cast<std::uint64_t>(reply->integer);
        }
        return removed;
    }

private:
    Connection connect() const {
        redisOptions options{};
        if (address_.socket_path.empty()) {
            REDIS_OPTIONS_SET_TCP(&options, address_.host.c_str(), address_.port);
        } else {
            REDIS_OPTIONS_SET_UNIX(&options, address_.socket_path.c_str());
        }
        const timeval connect_timeout = to_timeval(timeouts_.connect);
        const timeval operation_timeout = to_timeval(timeouts_.operation);
        options.connect_timeout = &connect_timeout;
        options.command_timeout = &operation_timeout;
        Connection connection(redisConnectWithOptions(&options));
        if (!connection) throw RemoteError(description_ + ": cannot allocate a connection");
        if (connection->err) throw RemoteError(description_ + ": cannot connect: " + connection->errstr);
        if (address_.database != 0) {
            const std::string database = std::to_string(address_.database);
            const char* argv[] = {"SELECT", database.c_str()};
            const std::size_t lengths[] = {6, database.size()};
            const Reply reply(static_cast<redisReply*>(redisCommandArgv(connection.get(), 2, argv, lengths)));
            if (!reply) throw RemoteError(description_ + ": " + connection->errstr);
            if (reply->type == REDIS_REPLY_ERROR) throw RemoteError(description_ + ": SELECT: " + reply->str);
        }
        return connection;
    }

    Connection borrow() {
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                Connection connection = std::move(idle_.back());
                idle_.pop_back();
                return connection;
            }
        }
        return connect();
    }

    void give_back(Connection connection) {
        std::lock_guard lock(mutex_);
        if (idle_.size() < idle_connections_kept) idle_.push_back(std::move(connection));
    }

    Reply command(const std::vector<std::string_view>& arguments) {
        Connection connection = borrow();
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        for (const std::string_view argument : arguments) {
            argv.push_back(argument.data());
            lengths.push_back(argument.size());
        }
        const std::string what = description_ + ": " + std::string(arguments.front());
        Reply reply = exchange(connection.get(), argv, lengths, what);
        give_back(std::move(connection));
        if (reply->type == REDIS_REPLY_ERROR) throw RemoteError(what + ": " + reply->str);
        return reply;
    }

    // Sends a command and reads its reply within one operation timeout in all. hiredis's own
    // command timeout bounds each read and write, not the whole: a server that trickles its
    // reply a byte at a time, or sends a huge value slowly, would hold the caller as long as
    // it liked. So the socket is waited on here, each wait for what is left of the timeout.
    // (A write, on hiredis's blocking socket, may still take one more timeout when the server
    // stops reading mid-value: its send timeout ends it.)
    // On failure the connection's state is unknown; the caller drops it (it is not given back).
    Reply exchange(redisContext* connection, std::vector<const char*>& argv, const std::vector<std::size_t>& lengths,
                   const std::string& what) const {
        const auto deadline = std::chrono::steady_clock::now() + timeouts_.operation;
        if (redisAppendCommandArgv(connection, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK)
            throw RemoteError(what + ": " + connection->errstr);
        for (int written = 0; !written;) {
            wait_for(connection, POLLOUT, deadline, what);
            if (redisBufferWrite(connection, &written) != REDIS_OK) throw RemoteError(what + ": " + connection->errstr);
        }
        void* reply = nullptr;
        for (;;) {
            if (redisGetReplyFromReader(connection, &reply) != REDIS_OK)
                throw RemoteError(what + ": " + connection->errstr);
            if (reply) return Reply(static_cast<redisReply*>(reply));
            wait_for(connection, POLLIN, deadline, what);
            if (redisBufferRead(connection) != REDIS_OK) throw RemoteError(what + ": " + connection->errstr);
        }
    }

    // Waits until the socket is ready for `events`, or throws once the deadline has passed.
    void wait_for(const redisContext* connection, short events, std::chrono::steady_clock::time_point deadline,
                  const std::string& what) const {
        for (;;) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            pollfd socket{connection->fd, events, 0};
            const int ready = poll(&socket, 1, static_cast<int>(left.count()));
            if (ready > 0) return;
            if (ready < 0 && errno != EINTR) throw RemoteError(what + ": poll: " + std::strerror(errno));
        }
        throw RemoteError(what + ": no reply within " + std::to_string(timeouts_.operation.count()) + " ms");
    }

    void expect(const Reply& reply, int type, std::string_view what) const {
        if (reply->type != type) throw RemoteError(description_ + ": unexpected reply to " + std::string(what));
    }

    const RemoteAddress address_;
    const RemoteTimeouts timeouts_;
    const std::string description_;
    std::mutex mutex_;
    std::vector<Connection> idle_;
};

}  // namespace

std::unique_ptr<RemoteStorage> connect_remote_storage(const RemoteAddress& address, const RemoteTimeouts& timeouts) {
    return std::make_unique<RedisStorage>(address, timeouts);
}

}  // namespace fajit::cache
