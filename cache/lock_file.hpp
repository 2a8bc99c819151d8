#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace fajit::cache {

// Cross-process mutual exclusion by a file created with O_CREAT|O_EXCL (atomic on local file
// systems and on NFSv3+). The file names its owner as "pid hostname unix-nanoseconds nonce".
// While the lock is held a background thread keeps it alive, setting its mtime to now every
// refresh_interval(stale_after), so work of any length (a long compile) keeps it. A waiter
// breaks a lock whose owner has died on this host at once, and any lock not refreshed for
// `stale_after`: an owner that hangs as a whole, or vanished on another host.
//
// Breaking renames the lock aside and checks it was the one judged stale; if a new owner's
// lock was caught instead it is linked back. The lock therefore guards against duplicate
// work, not against corruption: callers must stay correct (publishing atomically) if two
// owners ever overlap.
class LockFile {
public:
    enum class Outcome {
        acquired,                // free at the first attempt
        acquired_after_waiting,  // another owner held it (or a stale lock was broken) first
        timed_out,               // a live owner kept it for the whole timeout
        unavailable,             // the lock cannot be created at all, e.g. an unwritable directory
    };

    LockFile(std::filesystem::path path, std::chrono::milliseconds stale_after);
    ~LockFile();  // releases a held lock
    // A quarter of stale_after and at most 5 s: a few missed refreshes (a busy machine, a
    // slow network file system) still do not make a held lock look stale.
    static std::chrono::milliseconds refresh_interval(std::chrono::milliseconds stale_after);
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;

    Outcome acquire(std::chrono::milliseconds timeout);
    void release();
    bool held() const { return held_; }

private:
    enum class Attempt { created, busy, failed };
    Attempt try_create();
    // True if the current lock file was stale and has been removed.
    bool break_if_stale();
    // The heartbeat thread's loop: refreshes the lock until stopped, or until the lock turns
    // out to be someone else's (a waiter judged it stale); a lock it cannot read is not that.
    void keep_alive(std::stop_token stop);

    std::filesystem::path path_;
    std::chrono::milliseconds stale_after_;
    std::string owner_record_;
    bool held_ = false;
    std::mutex heartbeat_mutex_;
    std::condition_variable_any heartbeat_wake_;  // wakes keep_alive early when it is stopped
    std::jthread heartbeat_;
};

}  // namespace fajit::cache
