#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace fajit::cache {

// Cross-process mutual exclusion by a file created with O_CREAT|O_EXCL (atomic on local file
// systems and on NFSv3+). The file names its owner as "pid hostname unix-nanoseconds nonce",
// so a waiter can break a lock whose owner has died on this host, or that is older than
// `stale_after` (an owner on another host, or one that hangs).
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

    std::filesystem::path path_;
    std::chrono::milliseconds stale_after_;
    std::string owner_record_;
    bool held_ = false;
};

}  // namespace fajit::cache
