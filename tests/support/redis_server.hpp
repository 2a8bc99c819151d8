#pragma once
// A real redis-server on 127.0.0.1, on a free port, for the suites that test the fleet cache:
// started on construction, stopped on destruction, and killed, paused or restarted on
// demand to play the server's faults. Never a mock: the store is the one fleets run.
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace fajit::testing {

class RedisServer {
public:
    // Throws std::runtime_error if no server comes up within a few seconds.
    explicit RedisServer(std::filesystem::path log_directory);
    ~RedisServer();  // stops it
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    // "redis://127.0.0.1:<port>/0", what FAJIT_REMOTE_CACHE takes.
    std::string url() const;
    // "unix://<log directory>/redis-<port>.sock": the same server through its unix socket.
    std::string socket_url() const;
    int port() const { return port_; }

    void kill_hard();  // SIGKILL, and reaped: its data is gone
    void pause();      // SIGSTOP: connections open, nothing answers
    void resume();     // SIGCONT
    void restart();    // a new, empty server on the same port
    bool running() const { return pid_ > 0; }

private:
    void start();
    std::string socket_path() const;

    std::filesystem::path log_directory_;
    int port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace fajit::testing
