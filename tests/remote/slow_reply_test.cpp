// A peer that trickles its reply: each byte comes within the read timeout, the whole far
// past it. redis-server cannot be made to do this (a slow link or a proxy can), so the peer
// here is a socket that speaks just enough of the protocol: it answers any command with a
// 40-byte bulk string, one byte every 50 ms. An operation must give up after one operation
// timeout in all, not one per byte.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "cache/remote_storage.hpp"

using namespace fajit::cache;
using namespace std::chrono_literals;

namespace {

class TricklingPeer {
public:
    TricklingPeer() {
        listener_ = socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(listener_ >= 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(listen(listener_, 4) == 0);
        socklen_t length = sizeof address;
        REQUIRE(getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
        port_ = ntohs(address.sin_port);
        serving_ = std::thread([this] { serve(); });
    }
    ~TricklingPeer() {
        stop_ = true;
        serving_.join();
        close(listener_);
    }
    TricklingPeer(const TricklingPeer&) = delete;
    TricklingPeer& operator=(const TricklingPeer&) = delete;

    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
    // One client at a time: waits for a command, then trickles the reply until it is all
    // sent, the client goes away, or the test ends.
    void serve() {
        while (!stop_) {
            pollfd waiting{listener_, POLLIN, 0};
            if (poll(&waiting, 1, 20) <= 0) continue;
            const int client = accept(listener_, nullptr, nullptr);
            if (client < 0) continue;
            char request[4096];
            pollfd readable{client, POLLIN, 0};
            while (!stop_ && poll(&readable, 1, 20) == 0) {
            }
            if (!stop_ && read(client, request, sizeof request) > 0) {
                const std::string reply = "$40\r\n" + std::string(40, 'x') + "\r\n";
                for (const char byte : reply) {
                    if (stop_ || send(client, &byte, 1, MSG_NOSIGNAL) != 1) break;
                    std::this_thread::sleep_for(50ms);
                }
            }
            close(client);
        }
    }

    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread serving_;
};

}  // namespace

TEST_CASE("a reply trickled a byte at a time fails after one operation timeout, not one per byte") {
    TricklingPeer peer;
    const auto storage = connect_remote_storage(parse_remote_address(peer.url()), {300ms, 300ms});
    const auto start = std::chrono::steady_clock::now();
    // The whole reply takes 47 x 50 ms, each byte well within the 300 ms read timeout.
    CHECK_THROWS_WITH_AS(storage->get("entry"), doctest::Contains("no reply within 300 ms"), RemoteError);
    const auto took = std::chrono::steady_clock::now() - start;
    // One operation timeout, with slack for a loaded machine; the reply alone takes 2.35 s.
    CHECK(took < 300ms + 500ms);
}
