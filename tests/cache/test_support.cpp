#include "test_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <spdlog/sinks/ostream_sink.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/layout.hpp"

namespace fajit::cache::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fajit-cache-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code error;
    // Tests make directories read-only; give write access back so everything can go.
    for (auto it = fs::recursive_directory_iterator(path_, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
        if (it->is_directory(error)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, error);
    }
    fs::remove_all(path_, error);
}

CapturedLog::CapturedLog() : stream_(std::make_shared<std::ostringstream>()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*stream_);
    sink->set_pattern("%l|%v");
    logger_ = std::make_shared<spdlog::logger>("fajit-cache-test", sink);
    logger_->set_level(spdlog::level::debug);
}

std::size_t CapturedLog::lines_at(std::string_view level) const {
    std::istringstream lines(text());
    std::size_t count = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with(std::string(level) + "|")) ++count;
    }
    return count;
}

std::string CapturedLog::text() const {
    logger_->flush();
    return stream_->str();
}

Key key_of(std::string_view name) { return KeyBuilder().add("test-key", name).finish(); }

Entry entry_for(std::string_view seed, std::size_t payload_bytes) {
    Entry entry;
    entry.metadata = {{"seed", seed}, {"log", "compiled for a test"}};
    const Key digest = key_of(seed);
    entry.payload.resize(payload_bytes);
    for (std::size_t i = 0; i < payload_bytes; ++i) {
        entry.payload[i] = static_cast<std::byte>(digest.digest[i % digest.digest.size()] ^ (i * 131 >> 3));
    }
    return entry;
}

DiskCacheConfig config_at(const fs::path& root, const CapturedLog& log) {
    DiskCacheConfig config;
    config.root = root;
    config.logger = log.logger();
    return config;
}

std::string this_host() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
}

pid_t start_child(const std::function<int()>& body) {
    // A child that leaves through exit() flushes stdio; what the parent had buffered must not
    // come out twice.
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        int code = 99;
        try {
            code = body();
        } catch (...) {
            code = 98;
        }
        ::_exit(code);
    }
    return pid;
}

int wait_for_child(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

int run_in_child(const std::function<int()>& body) { return wait_for_child(start_child(body)); }

std::vector<std::byte> read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
    return bytes;
}

void write_bytes(const fs::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<fs::path> temp_files_under(const fs::path& root) {
    std::vector<fs::path> found;
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
        if (it->is_regular_file(error) && is_temp_file_name(it->path().filename().string()))
            found.push_back(it->path());
    }
    return found;
}

}  // namespace fajit::cache::testing
