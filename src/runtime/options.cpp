#include "fajit/options.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace fajit {
namespace {

std::optional<std::string> environment(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string(value);
}

bool parse_flag(const char* name, const std::string& value) {
    if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
    if (value == "0" || value == "false" || value == "no" || value == "off") return false;
    throw std::invalid_argument(std::string(name) + "=" + value + ": expected 1 or 0");
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(const std::string& text) {
    std::uint64_t number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || end == text.data()) return std::nullopt;
    std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
    if (suffix.ends_with("iB")) suffix.remove_suffix(2);
    else if (suffix.ends_with("B") && suffix.size() == 2) suffix.remove_suffix(1);
    int shift = 0;
    if (suffix == "K") shift = 10;
    else if (suffix == "M") shift = 20;
    else if (suffix == "G") shift = 30;
    else if (suffix == "T") shift = 40;
    else if (!suffix.empty()) return std::nullopt;
    if (shift && number > (~0ull >> shift)) return std::nullopt;
    return number << shift;
}

Options Options::from_environment() {
    Options options;
    if (auto dir = environment("FAJIT_CACHE_DIR")) options.cache_dir = *dir;
    else if (auto xdg = environment("XDG_CACHE_HOME")) options.cache_dir = std::filesystem::path(*xdg) / "fa-jit";
    else if (auto home = environment("HOME")) options.cache_dir = std::filesystem::path(*home) / ".cache" / "fa-jit";

    if (auto size = environment("FAJIT_CACHE_MAX_SIZE")) {
        const auto bytes = parse_byte_size(*size);
        if (!bytes) throw std::invalid_argument("FAJIT_CACHE_MAX_SIZE=" + *size + ": expected bytes, e.g. 2G or 512M");
        options.cache_max_bytes = *bytes;
    }
    if (auto disable = environment("FAJIT_CACHE_DISABLE"))
        options.cache_disabled = parse_flag("FAJIT_CACHE_DISABLE", *disable);
    if (auto counters = environment("FAJIT_DEBUG_COUNTERS"))
        options.debug_counters = parse_flag("FAJIT_DEBUG_COUNTERS", *counters);
    if (auto dir = environment("FAJIT_TEMPLATE_DIR")) options.template_dir = *dir;
    if (auto level = environment("FAJIT_LOG_LEVEL")) {
        static constexpr const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
        bool known = false;
        for (const char* candidate : levels) known |= *level == candidate;
        if (!known)
            throw std::invalid_argument("FAJIT_LOG_LEVEL=" + *level + ": expected trace, debug, info, warn, error or off");
        options.log_level = *level;
    }
    return options;
}

}  // namespace fajit
