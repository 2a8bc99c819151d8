#include "backend/dynamic_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <vector>

#include "cache/file_fingerprint_memo.hpp"

namespace fajit {

DynamicLibrary::DynamicLibrary(const std::vector<std::string>& candidates) {
    for (const auto& name : candidates) {
        handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_) return;
        if (!error_.empty()) error_ += "; ";
        const char* reason = dlerror();
        error_ += reason ? reason : name + ": not found";
    }
}

std::string DynamicLibrary::path() const {
    if (!handle_) return {};
    link_map* map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return {};
    return map->l_name;
}

void* DynamicLibrary::lookup(const char* symbol) { return handle_ ? dlsym(handle_, symbol) : nullptr; }

namespace {

std::mutex memo_mutex;
std::filesystem::path memo_file;  // under memo_mutex

}  // namespace

void remember_fingerprints_in(std::filesystem::path memo) {
    std::lock_guard lock(memo_mutex);
    memo_file = std::move(memo);
}

std::string file_fingerprint(const std::string& path) {
    std::filesystem::path memo;
    {
        std::lock_guard lock(memo_mutex);
        memo = memo_file;
    }
    const auto fingerprint = cache::FileFingerprintMemo(memo).fingerprint(path);
    return fingerprint ? fingerprint->hex : "unreadable";
}

}  // namespace fajit
