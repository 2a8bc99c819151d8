#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace fajit::cache {

// Writes a file so that readers see either its previous state or the complete new content,
// even if the writer is killed midway: the bytes go to a temp file in the same directory
// (see temp_file_name), which is fsynced and then renamed over the target; the directory is
// fsynced so the rename itself survives a crash. Errors throw std::system_error.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path target);
    // Removes the temp file unless commit() succeeded, so failures leave nothing behind.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(std::span<const std::byte> bytes);
    void commit();

private:
    std::filesystem::path target_;
    std::filesystem::path temp_path_;
    int fd_ = -1;
};

}  // namespace fajit::cache
