#pragma once
// Variants that failed to compile or load, remembered so a process (and the next one)
// goes straight to the fallback instead of failing again. Each failure is kept in memory
// and, when a cache directory is in use, as one small JSON file under
// <cache root>/failed-variants/, named by a hash of the spec, the compiler identity and the
// library version: a new compiler or a new fa-jit tries the variant afresh. Deleting the
// directory (or clearing the cache) forgets them all.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "fajit/runtime.hpp"

namespace fajit {

struct VariantFailure {
    ErrorKind kind = ErrorKind::compile_failed;  // compile_failed or load_failed
    std::string summary;                         // the variant and the first lines of the log
};

class FailedVariants {
public:
    // An empty directory keeps failures in memory only.
    explicit FailedVariants(std::filesystem::path directory);

    // How spec failed under compiler before, if it did.
    std::optional<VariantFailure> find(const std::string& spec, const std::string& compiler);
    // Remembers a failure. A directory that cannot be written is reported once and then
    // left alone: the failure is still remembered in memory.
    void record(const std::string& spec, const std::string& compiler, const VariantFailure&);

    const std::filesystem::path& directory() const { return directory_; }

private:
    std::filesystem::path file_of(const std::string& key) const;

    std::filesystem::path directory_;
    bool disk_failed_ = false;
    std::map<std::string, VariantFailure> in_memory_;  // by key, as in the file name
};

}  // namespace fajit
