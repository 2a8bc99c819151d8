#include "remote_support.hpp"

#include <fstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace fajit::cache::testing {

DiskCacheConfig remote_config_at(const std::filesystem::path& root, const CapturedLog& log,
                                 const RemoteSettings& settings) {
    DiskCacheConfig config = config_at(root, log);
    RemoteTierConfig remote;
    remote.storage = connect_remote_storage(parse_remote_address(settings.url),
                                            {settings.connect_timeout, settings.operation_timeout});
    remote.signing_key = settings.signing_key;
    remote.backoff = settings.backoff;
    remote.poll_interval = std::chrono::milliseconds(10);
    config.remote = std::move(remote);
    return config;
}

std::unique_ptr<RemoteStorage> raw_store(const std::string& url) {
    return connect_remote_storage(parse_remote_address(url), {std::chrono::seconds(2), std::chrono::seconds(2)});
}

nlohmann::json required_for(std::string_view arch) { return {{"arch", arch}, {"compiler", "fake-compiler 1"}}; }

Entry compiled_entry(std::string_view arch, std::string_view seed) {
    Entry entry = entry_for(std::string(arch) + "/" + std::string(seed), 3000 + seed.size() * 61);
    entry.metadata.update(required_for(arch));
    return entry;
}

Entry compile_and_record(const std::filesystem::path& compile_log, std::string_view arch, std::string_view seed,
                         std::chrono::milliseconds takes) {
    const int fd = ::open(compile_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    const std::string line = std::string(arch) + "/" + std::string(seed) + "\n";
    const bool logged = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (fd >= 0) ::close(fd);
    if (!logged) throw std::runtime_error("cannot append to the compile log");
    std::this_thread::sleep_for(takes);
    return compiled_entry(arch, seed);
}

Entry request(DiskCache& cache, const std::filesystem::path& compile_log, std::string_view arch, std::string_view seed,
              std::chrono::milliseconds takes) {
    return cache.get_or_create(
        arch, key_of(std::string(arch) + "/" + std::string(seed)),
        [&] { return compile_and_record(compile_log, arch, seed, takes); }, required_for(arch));
}

std::map<std::string, int> compiles_in(const std::filesystem::path& compile_log) {
    std::map<std::string, int> compiles;
    std::ifstream lines(compile_log);
    for (std::string line; std::getline(lines, line);) ++compiles[line];
    return compiles;
}

}  // namespace fajit::cache::testing
