#pragma once
// A directory of one test process, removed when the process ends: what a suite caches
// there, no other suite or earlier run ever sees.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace fajit::testing {

struct ScratchDirectory {
    explicit ScratchDirectory(const std::string& prefix)
        : path(std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(path);
    }
    ~ScratchDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;

    std::filesystem::path path;
};

}  // namespace fajit::testing
