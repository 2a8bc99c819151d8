#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cache/key.hpp"

namespace fajit::cache {

// Where things live under a cache root:
//   <root>/v<format>/stats.json                        persisted statistics
//   <root>/v<format>/file-fingerprints                 remembered hashes of files (see file_fingerprint_memo.hpp)
//   <root>/v<format>/<arch>/<2 hex>/<32 hex>           an entry
//   <root>/v<format>/<arch>/<2 hex>/<32 hex>.lock      single-flight lock for that key
//   <root>/v<format>/<arch>/<2 hex>/<name>.tmp.<pid>.<random>  a file being written
//   <root>/v<format>/<arch>/failures/<32 hex>         a failure record (see failure_record.hpp)
// The format version in the path lets an old and a new fa-jit share one root without
// reading each other's entries.
class Layout {
public:
    explicit Layout(std::filesystem::path root);

    const std::filesystem::path& root() const { return root_; }
    // Holds every arch directory; what clear() empties.
    std::filesystem::path versioned_root() const;
    std::filesystem::path arch_directory(std::string_view arch) const;
    std::filesystem::path entry_path(std::string_view arch, const Key& key) const;
    std::filesystem::path lock_path(std::string_view arch, const Key& key) const;
    // Not a shard name (those are two hex digits), so entry scans never mistake it for one.
    std::filesystem::path failures_directory(std::string_view arch) const;
    std::filesystem::path failure_path(std::string_view arch, const Key& key) const;
    std::filesystem::path stats_path() const;
    std::filesystem::path fingerprint_memo_path() const;

private:
    std::filesystem::path root_;
};

// Arch names such as "gfx90a:sramecc+:xnack-" are kept whole so distinct targets never share
// a directory. Only bytes unsafe in a file name, a leading '.' and '%' itself are %XX-escaped,
// so the mapping is reversible and never yields ".", ".." or a hidden name.
std::string escape_arch(std::string_view arch);
std::optional<std::string> unescape_arch(std::string_view directory_name);

// Temp files carry this marker; anything with it is an unfinished write.
inline constexpr std::string_view temp_marker = ".tmp.";
bool is_temp_file_name(std::string_view file_name);
// "<name>.tmp.<pid>.<random>": unique among concurrent writers, and names its writer for debugging.
std::string temp_file_name(std::string_view final_name);

}  // namespace fajit::cache
