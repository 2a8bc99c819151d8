#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "cache/disk_cache.hpp"
#include "cache/entry.hpp"
#include "cache/key.hpp"

namespace fajit::cache::testing {

// A fresh directory under the system temp directory, removed (with everything in it) afterwards.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A logger whose output the test can inspect; lines look like "warning|message".
class CapturedLog {
public:
    CapturedLog();
    std::shared_ptr<spdlog::logger> logger() const { return logger_; }
    std::size_t lines_at(std::string_view level) const;
    std::string text() const;

private:
    std::shared_ptr<std::ostringstream> stream_;
    std::shared_ptr<spdlog::logger> logger_;
};

Key key_of(std::string_view name);
// Deterministic content derived from `seed`, so any process can check what it read.
Entry entry_for(std::string_view seed, std::size_t payload_bytes);

DiskCacheConfig config_at(const std::filesystem::path& root, const CapturedLog& log);

// This machine's host name, as lock files record their owner's.
std::string this_host();

// Runs body in a forked child and returns its exit code (128 + signal if it was killed).
// The child leaves with _exit, so nothing of the parent's test state runs twice, unless body
// itself calls exit().
int run_in_child(const std::function<int()>& body);
pid_t start_child(const std::function<int()>& body);
int wait_for_child(pid_t pid);

std::vector<std::byte> read_bytes(const std::filesystem::path& path);
void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes);

// Every regular file under root whose name marks it as an unfinished write.
std::vector<std::filesystem::path> temp_files_under(const std::filesystem::path& root);

}  // namespace fajit::cache::testing
