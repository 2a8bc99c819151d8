#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace fajit::cache {

// Remembers the hashes of large files that rarely change (compiler libraries, whose hash is
// part of every cache key) in one small file, so a new process need not read tens of
// megabytes again. A remembered hash is used only while the file still has the path, device,
// inode, size, mtime and ctime (in ns) it had when hashed; any change re-hashes, and ctime,
// which no one can set back, catches a content change whose mtime was restored.
//
// The memo is an optimization: a damaged, unreadable or unwritable memo file only means
// hashing again. Concurrent writers may drop each other's additions for the same reason.
class FileFingerprintMemo {
public:
    // A file changed less than `settle` ago is hashed but not remembered: a further change
    // within the same file-system timestamp tick would leave its stat data unchanged.
    // An empty memo_path remembers nothing.
    explicit FileFingerprintMemo(std::filesystem::path memo_path,
                                 std::chrono::milliseconds settle = std::chrono::seconds(2));

    struct Fingerprint {
        std::string hex;  // XXH3-64 of the file's bytes, 16 lowercase hex digits
        bool remembered;  // true if it came from the memo, false if the file was read
    };
    // nullopt if the file cannot be read.
    std::optional<Fingerprint> fingerprint(const std::filesystem::path& file) const;

private:
    std::filesystem::path memo_path_;
    std::chrono::milliseconds settle_;
};

}  // namespace fajit::cache
