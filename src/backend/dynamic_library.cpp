#include "backend/dynamic_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <vector>

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

std::string file_fingerprint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "unreadable";
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        XXH3_64bits_update(state, buffer.data(), static_cast<std::size_t>(in.gcount()));
    }
    const auto digest = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
    return hex;
}

}  // namespace fajit
