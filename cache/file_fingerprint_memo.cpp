#include "cache/file_fingerprint_memo.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <span>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "cache/atomic_file.hpp"
#include "cache/checksum.hpp"
#include "cache/entry.hpp"
#include "cache/file_reading.hpp"

namespace fajit::cache {

namespace {

namespace fs = std::filesystem;

std::int64_t nanoseconds_of(const timespec& time) {
    return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

// What must be unchanged for a remembered hash to hold; compared as JSON, as stored.
std::optional<nlohmann::json> identity_of(const fs::path& file) {
    struct stat status {};
    if (::stat(file.c_str(), &status) != 0) return std::nullopt;
    return nlohmann::json{{"device", static_cast<std::uint64_t>(status.st_dev)},
                          {"inode", static_cast<std::uint64_t>(status.st_ino)},
                          {"size", static_cast<std::int64_t>(status.st_size)},
                          {"mtime_ns", nanoseconds_of(status.st_mtim)},
                          {"ctime_ns", nanoseconds_of(status.st_ctim)}};
}

std::int64_t now_unix_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return nanoseconds_of(now);
}

// Thousands of remembered files; a larger memo is damaged, and is rewritten small.
constexpr std::uint64_t memo_limit = 1 << 20;

// The memo's "files" object, by path; empty if the memo is missing or damaged.
nlohmann::json read_memo(const fs::path& memo_path) {
    std::error_code error;
    const auto bytes = read_file(memo_path, error, memo_limit);
    if (!bytes) return nlohmann::json::object();
    const DecodeResult decoded = decode_entry(*bytes);
    if (!decoded.entry || !decoded.entry->metadata.is_object()) return nlohmann::json::object();
    const auto files = decoded.entry->metadata.find("files");
    if (files == decoded.entry->metadata.end() || !files->is_object()) return nlohmann::json::object();
    return *files;
}

void write_memo(const fs::path& memo_path, const nlohmann::json& files) {
    try {
        fs::create_directories(memo_path.parent_path());
        AtomicFile file(memo_path);
        file.write(encode_entry(Entry{{{"files", files}}, {}}));
        file.commit();
    } catch (const std::exception&) {
        // Unwritable: the next process hashes again, which is all the memo saves.
    }
}

std::string hex_of(std::uint64_t digest) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
    return hex;
}

}  // namespace

FileFingerprintMemo::FileFingerprintMemo(fs::path memo_path, std::chrono::milliseconds settle)
    : memo_path_(std::move(memo_path)), settle_(settle) {}

std::optional<FileFingerprintMemo::Fingerprint> FileFingerprintMemo::fingerprint(const fs::path& file) const {
    const auto identity = identity_of(file);
    if (!identity) return std::nullopt;
    nlohmann::json files = memo_path_.empty() ? nlohmann::json::object() : read_memo(memo_path_);
    const auto known = files.find(file.string());
    if (known != files.end() && known->is_object() && known->value("identity", nlohmann::json()) == *identity &&
        known->value("xxh3_64", nlohmann::json()).is_string())
        return Fingerprint{known->at("xxh3_64").get<std::string>(), true};

    const auto digest = xxh3_64_of_file(file);
    if (!digest) return std::nullopt;
    const Fingerprint fingerprint{hex_of(*digest), false};
    const std::int64_t changed_ns =
        std::max(identity->at("mtime_ns").get<std::int64_t>(), identity->at("ctime_ns").get<std::int64_t>());
    const bool settled =
        now_unix_ns() - changed_ns >= std::chrono::duration_cast<std::chrono::nanoseconds>(settle_).count();
    // A file that changed while it was read has no one hash to remember.
    if (memo_path_.empty() || !settled || identity_of(file) != identity) return fingerprint;
    files[file.string()] = {{"identity", *identity}, {"xxh3_64", fingerprint.hex}};
    write_memo(memo_path_, files);
    return fingerprint;
}

}  // namespace fajit::cache
