#include "cache/atomic_file.hpp"

#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include "cache/layout.hpp"

namespace fajit::cache {

namespace {

[[noreturn]] void throw_errno(const char* what, const std::filesystem::path& path) {
    throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path.string());
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target)
    : target_(std::move(target)), temp_path_(target_.parent_path() / temp_file_name(target_.filename().string())) {
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_errno("cannot create", temp_path_);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(temp_path_.c_str());
    }
}

void AtomicFile::write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        const ssize_t written = ::write(fd_, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            throw_errno("cannot write", temp_path_);
        }
        bytes = bytes.subspan(static_cast<std::size_t>(written));
    }
}

void AtomicFile::commit() {
    // Without this fsync a crash after the rename could expose a named but empty or short file.
    if (::fsync(fd_) != 0) throw_errno("cannot fsync", temp_path_);
    if (::rename(temp_path_.c_str(), target_.c_str()) != 0) throw_errno("cannot rename onto", target_);
    ::close(fd_);
    fd_ = -1;
    // Best effort: the content is already complete and visible; some file systems refuse
    // fsync on directories, and that must not turn a successful publish into a failure.
    const int directory = ::open(target_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory >= 0) {
        ::fsync(directory);
        ::close(directory);
    }
}

}  // namespace fajit::cache
