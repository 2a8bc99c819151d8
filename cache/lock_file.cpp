#include "cache/lock_file.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/file_reading.hpp"
#include "cache/layout.hpp"

namespace fajit::cache {

namespace {

const std::string& host_name() {
    static const std::string name = [] {
        char buffer[256] = {};
        if (::gethostname(buffer, sizeof buffer - 1) != 0) return std::string("unknown-host");
        return std::string(buffer);
    }();
    return name;
}

std::int64_t now_unix_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Formatted and parsed without iostreams: the library runs inside host processes
// (Python with PyTorch, for one) whose global locale state it must not depend on.
std::string make_owner_record() {
    // The nonce tells apart two locks of one process (several threads, or a recycled path).
    static std::atomic<std::uint64_t> counter{0};
    const std::uint64_t nonce = counter.fetch_add(1) ^ static_cast<std::uint64_t>(now_unix_ns());
    return std::to_string(::getpid()) + ' ' + host_name() + ' ' + std::to_string(now_unix_ns()) + ' ' +
           std::to_string(nonce) + '\n';
}

// The record's time says when the lock was taken, for people; staleness goes by mtime.
struct OwnerRecord {
    pid_t pid = 0;
    std::string host;
};

std::optional<OwnerRecord> parse_owner_record(const std::string& text) {
    // "<pid> <host> <created ns> <nonce>\n"
    std::vector<std::string_view> fields;
    std::string_view rest(text);
    while (!rest.empty()) {
        const auto space = rest.find_first_of(" \n");
        if (space != 0) fields.push_back(rest.substr(0, space));
        if (space == std::string_view::npos) break;
        rest.remove_prefix(space + 1);
    }
    if (fields.size() != 4) return std::nullopt;
    OwnerRecord owner;
    owner.host = std::string(fields[1]);
    std::int64_t created_unix_ns = 0;
    std::uint64_t nonce = 0;
    const auto number = [](std::string_view field, auto& out) {
        const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
        return ec == std::errc{} && end == field.data() + field.size();
    };
    if (!number(fields[0], owner.pid) || !number(fields[2], created_unix_ns) || !number(fields[3], nonce))
        return std::nullopt;
    return owner;
}

bool process_is_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// More than any owner record (a host name is at most 255 bytes): a longer file holds no
// record, and its first bytes are judged as the garbage it is.
constexpr std::size_t owner_record_limit = 1024;

std::optional<std::string> read_text(const std::filesystem::path& path, std::error_code& error) {
    auto bytes = read_file_prefix(path, error, owner_record_limit);
    if (!bytes) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

// Removes `path` only if it still holds `expected`; see the class comment for why this is
// rename-then-check rather than check-then-unlink.
bool remove_if_content_is(const std::filesystem::path& path, const std::string& expected) {
    const std::filesystem::path aside = path.parent_path() / temp_file_name(path.filename().string());
    if (::rename(path.c_str(), aside.c_str()) != 0) return false;
    std::error_code error;
    const bool matches = read_text(aside, error) == expected;
    if (!matches) ::link(aside.c_str(), path.c_str());  // fails harmlessly if a newer lock exists
    ::unlink(aside.c_str());
    return matches;
}

}  // namespace

LockFile::LockFile(std::filesystem::path path, std::chrono::milliseconds stale_after)
    : path_(std::move(path)), stale_after_(stale_after) {}

LockFile::~LockFile() { release(); }

std::chrono::milliseconds LockFile::refresh_interval(std::chrono::milliseconds stale_after) {
    return std::clamp(stale_after / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(5000));
}

LockFile::Outcome LockFile::acquire(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    for (bool first_attempt = true;; first_attempt = false) {
        switch (try_create()) {
            case Attempt::created:
                return first_attempt ? Outcome::acquired : Outcome::acquired_after_waiting;
            case Attempt::failed:
                return Outcome::unavailable;
            case Attempt::busy:
                break;
        }
        if (break_if_stale()) continue;
        if (std::chrono::steady_clock::now() >= deadline) return Outcome::timed_out;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
}

void LockFile::release() {
    if (!held_) return;
    held_ = false;
    // Stopped before the file goes, so no refresh runs after this owner's last word on it.
    heartbeat_.request_stop();
    if (heartbeat_.joinable()) heartbeat_.join();
    // If a waiter judged this lock stale and took over, the file is now theirs; leave it.
    remove_if_content_is(path_, owner_record_);
}

void LockFile::keep_alive(std::stop_token stop) {
    const auto interval = refresh_interval(stale_after_);
    std::unique_lock lock(heartbeat_mutex_);
    // True when stopped; false when the interval passed.
    while (!heartbeat_wake_.wait_for(lock, stop, interval, [&stop] { return stop.stop_requested(); })) {
        std::error_code error;
        const auto content = read_text(path_, error);
        // A failed read proves nothing: a waiter may have renamed this lock aside for a moment
        // (remove_if_content_is) and be about to put it back. It is tried again next time.
        if (!content) continue;
        // A lock broken as stale (this process was stopped, say) may now be another owner's.
        // Should it change hands between this check and the touch, the touch only keeps the
        // live new owner's lock alive.
        if (*content != owner_record_) return;
        ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
    }
}

LockFile::Attempt LockFile::try_create() {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return errno == EEXIST ? Attempt::busy : Attempt::failed;
    owner_record_ = make_owner_record();
    const bool written =
        ::write(fd, owner_record_.data(), owner_record_.size()) == static_cast<ssize_t>(owner_record_.size());
    ::close(fd);
    if (!written) {
        ::unlink(path_.c_str());
        return Attempt::failed;
    }
    held_ = true;
    heartbeat_ = std::jthread([this](std::stop_token stop) { keep_alive(std::move(stop)); });
    return Attempt::created;
}

bool LockFile::break_if_stale() {
    std::error_code error;
    const auto content = read_text(path_, error);
    if (!content) return error == std::errc::no_such_file_or_directory;  // released meanwhile: retry at once
    // An unparsable record (empty or partial: its owner is between create and write, or died
    // there) can only go stale by age.
    const auto owner = parse_owner_record(*content);
    const bool owner_died = owner && owner->host == host_name() && !process_is_alive(owner->pid);
    // A live owner refreshes the mtime every refresh_interval (keep_alive).
    const auto modified = std::filesystem::last_write_time(path_, error);
    const bool unrefreshed = !error && std::filesystem::file_time_type::clock::now() - modified > stale_after_;
    return (owner_died || unrefreshed) && remove_if_content_is(path_, *content);
}

}  // namespace fajit::cache
