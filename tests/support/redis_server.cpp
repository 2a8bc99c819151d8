#include "support/redis_server.hpp"

#include <csignal>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/remote_storage.hpp"

namespace fajit::testing {

namespace {

using namespace std::chrono_literals;

// A port nothing listens on now: the kernel's pick for a socket bound to port 0.
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        throw std::runtime_error("cannot find a free port");
    ::close(fd);
    return ntohs(address.sin_port);
}

bool answers(int port) {
    cache::RemoteAddress address;
    address.host = "127.0.0.1";
    address.port = port;
    try {
        cache::connect_remote_storage(address, {200ms, 200ms})->get("fajit-test:ping");
        return true;
    } catch (const cache::RemoteError&) {
        return false;
    }
}

}  // namespace

RedisServer::RedisServer(std::filesystem::path log_directory) : log_directory_(std::move(log_directory)) {
    std::filesystem::create_directories(log_directory_);
    // Another process may take the port between the pick and the server's bind: pick again.
    for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
        port_ = free_port();
        try {
            start();
        } catch (const std::runtime_error&) {
            if (attempt == 4) throw;
        }
    }
}

RedisServer::~RedisServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }

std::string RedisServer::socket_url() const { return "unix://" + socket_path(); }

std::string RedisServer::socket_path() const {
    return (log_directory_ / ("redis-" + std::to_string(port_) + ".sock")).string();
}

void RedisServer::start() {
    const std::string port = std::to_string(port_);
    const std::string log = (log_directory_ / ("redis-" + port + ".log")).string();
    const std::string socket = socket_path();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (out >= 0) {
            ::dup2(out, 1);
            ::dup2(out, 2);
        }
        ::execl(FAJIT_REDIS_SERVER, "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", log_directory_.c_str(), "--unixsocket", socket.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    pid_ = pid;
    for (int i = 0; i < 100; ++i) {
        if (answers(port_)) return;
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) break;  // it exited: the port was taken
        std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("redis-server did not come up on port " + port + " (see " + log + ")");
}

void RedisServer::kill_hard() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }

void RedisServer::resume() { ::kill(pid_, SIGCONT); }

void RedisServer::restart() {
    if (pid_ > 0) kill_hard();
    start();
}

}  // namespace fajit::testing
