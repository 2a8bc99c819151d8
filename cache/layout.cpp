#include "cache/layout.hpp"

#include <random>

#include <unistd.h>

#include "cache/entry.hpp"

namespace fajit::cache {

namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";

bool is_safe_in_file_name(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '+' || c == ':' || c == '.';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string shard_name(const Key& key) { return key.hex().substr(0, 2); }

}  // namespace

Layout::Layout(std::filesystem::path root) : root_(std::move(root)) {}

std::filesystem::path Layout::versioned_root() const { return root_ / ("v" + std::to_string(entry_format_version)); }

std::filesystem::path Layout::arch_directory(std::string_view arch) const {
    return versioned_root() / escape_arch(arch);
}

std::filesystem::path Layout::entry_path(std::string_view arch, const Key& key) const {
    return arch_directory(arch) / shard_name(key) / key.hex();
}

std::filesystem::path Layout::lock_path(std::string_view arch, const Key& key) const {
    return arch_directory(arch) / shard_name(key) / (key.hex() + ".lock");
}

std::filesystem::path Layout::failures_directory(std::string_view arch) const {
    return arch_directory(arch) / "failures";
}

std::filesystem::path Layout::failure_path(std::string_view arch, const Key& key) const {
    return failures_directory(arch) / key.hex();
}

std::filesystem::path Layout::stats_path() const { return versioned_root() / "stats.json"; }

std::filesystem::path Layout::fingerprint_memo_path() const { return versioned_root() / "file-fingerprints"; }

std::string escape_arch(std::string_view arch) {
    // A lone '%' cannot come from escaping (every escape has two hex digits), so it names the empty arch.
    if (arch.empty()) return "%";
    std::string escaped;
    for (std::size_t i = 0; i < arch.size(); ++i) {
        const char c = arch[i];
        // A leading '.' would make "." or ".." or a hidden directory.
        if (is_safe_in_file_name(c) && !(i == 0 && c == '.')) {
            escaped.push_back(c);
        } else {
            const auto byte = static_cast<unsigned char>(c);
            escaped.push_back('%');
            escaped.push_back(hex_digits[byte >> 4]);
            escaped.push_back(hex_digits[byte & 0x0f]);
        }
    }
    return escaped;
}

std::optional<std::string> unescape_arch(std::string_view directory_name) {
    if (directory_name == "%") return std::string();
    std::string arch;
    for (std::size_t i = 0; i < directory_name.size(); ++i) {
        const char c = directory_name[i];
        if (c != '%') {
            if (!is_safe_in_file_name(c)) return std::nullopt;
            arch.push_back(c);
            continue;
        }
        if (i + 2 >= directory_name.size()) return std::nullopt;
        const int high = hex_value(directory_name[i + 1]);
        const int low = hex_value(directory_name[i + 2]);
        if (high < 0 || low < 0) return std::nullopt;
        arch.push_back(static_cast<char>(high << 4 | low));
        i += 2;
    }
    // Only names escape_arch produces map back, so every listed arch has exactly one directory.
    if (escape_arch(arch) != directory_name) return std::nullopt;
    return arch;
}

bool is_temp_file_name(std::string_view file_name) { return file_name.find(temp_marker) != std::string_view::npos; }

std::string temp_file_name(std::string_view final_name) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    const std::uint64_t suffix = random();
    std::string name(final_name);
    name += temp_marker;
    name += std::to_string(::getpid());
    name += '.';
    for (int shift = 60; shift >= 0; shift -= 4) name.push_back(hex_digits[suffix >> shift & 0xf]);
    return name;
}

}  // namespace fajit::cache
