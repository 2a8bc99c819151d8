#pragma once
// A dlopen'ed library whose symbols a backend binds by name.
#include <filesystem>
#include <string>
#include <vector>

namespace fajit {

class DynamicLibrary {
public:
    // Tries each candidate soname in order; error() says what failed when none loads.
    // Never unloaded: GPU runtimes register exit handlers and threads, and unloading
    // them before exit crashes the process.
    explicit DynamicLibrary(const std::vector<std::string>& candidates);
    DynamicLibrary(const DynamicLibrary&) = delete;
    DynamicLibrary& operator=(const DynamicLibrary&) = delete;

    bool loaded() const { return handle_ != nullptr; }
    const std::string& error() const { return error_; }
    // The file the loader picked, for fingerprinting.
    std::string path() const;

    template <class Function>
    bool bind(Function*& out, const char* symbol) {
        out = reinterpret_cast<Function*>(lookup(symbol));
        return out != nullptr;
    }

private:
    void* lookup(const char* symbol);
    void* handle_ = nullptr;
    std::string error_;
};

// XXH3-64 of a file's bytes as hex, "unreadable" when it cannot be read. Used to
// fingerprint compiler libraries, so a rebuilt toolchain changes cache keys. Reading them
// costs tens of milliseconds, so the hashes are remembered across processes in memo (see
// cache/file_fingerprint_memo.hpp); the runtime names its cache's memo file here, and until
// then, or with an empty path, every call reads the file. Process-wide, since the backends
// are made before any cache directory reaches them; any memo gives the same hashes.
void remember_fingerprints_in(std::filesystem::path memo);
std::string file_fingerprint(const std::string& path);

}  // namespace fajit
