#pragma once
// Every setting of fa-jit, in one place. Programs fill it from their arguments; the
// library fills what they leave unset from FAJIT_* environment variables.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace fajit {

struct Options {
    // Where compiled kernels are kept: FAJIT_CACHE_DIR, else $XDG_CACHE_HOME/fa-jit,
    // else $HOME/.cache/fa-jit. Empty when none of them is set: memory only.
    std::filesystem::path cache_dir;
    std::uint64_t cache_max_bytes = 2ull << 30;  // FAJIT_CACHE_MAX_SIZE, bytes or with K/M/G suffix
    bool cache_disabled = false;                 // FAJIT_CACHE_DISABLE=1
    std::filesystem::path template_dir;          // FAJIT_TEMPLATE_DIR: read templates from here
    std::string log_level = "warn";              // FAJIT_LOG_LEVEL: trace, debug, info, warn, error, off
    // FAJIT_DEBUG_COUNTERS=1 compiles the kernels' test counters in (see
    // AttentionArgs::debug_counters). Such kernels are cached under their own keys.
    bool debug_counters = false;

    // Reads FAJIT_* variables over the defaults. Throws std::invalid_argument naming
    // the variable and its value when one is malformed.
    static Options from_environment();
};

// Parses "2G", "512M", "4096": bytes with an optional binary K/M/G/T suffix.
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

}  // namespace fajit
