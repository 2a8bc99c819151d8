#include "fajit/options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include "cache/remote_storage.hpp"
#include "families/registry.hpp"
#include "spec/comma_list.hpp"

namespace fajit {
namespace {

constexpr std::string_view setting_names[] = {
    "FAJIT_CACHE_DIR", "FAJIT_CACHE_MAX_SIZE", "FAJIT_CACHE_DISABLE", "FAJIT_TEMPLATE_DIR", "FAJIT_LOG_LEVEL",
    "FAJIT_DEBUG_COUNTERS", "FAJIT_FAMILY", "FAJIT_FORCE_FALLBACK", "FAJIT_TILE", "FAJIT_STRICT",
    "FAJIT_MAX_LOADED_KERNELS", "FAJIT_CHECK_INDICES", "FAJIT_DECODE_SPLITS", "FAJIT_TENSOR_MAPS",
    "FAJIT_PROGRAMMATIC_LAUNCH", "FAJIT_CLUSTER_MERGE",
    // The fleet cache.
    "FAJIT_REMOTE_CACHE", "FAJIT_REMOTE_CACHE_KEY", "FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT", "FAJIT_REMOTE_CACHE_TIMEOUT",
    "FAJIT_REMOTE_CACHE_BACKOFF"};

using Overrides = std::map<std::string, std::string, std::less<>>;

// An override, else the environment variable; empty counts as unset either way.
std::optional<std::string> setting(const Overrides& overrides, const char* name) {
    if (auto it = overrides.find(name); it != overrides.end())
        return it->second.empty() ? std::nullopt : std::optional<std::string>(it->second);
    const char* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string(value);
}

// The value when all of text is one unsigned number; the callers bound it and say how.
template <class Number>
std::optional<Number> parse_whole_number(const std::string& text) {
    Number number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return number;
}

std::chrono::milliseconds parse_milliseconds(const char* name, const std::string& value) {
    const auto number = parse_whole_number<unsigned>(value);
    if (!number || *number == 0)
        throw InvalidOption(std::string(name) + "=" + value + ": expected a positive number of milliseconds");
    return std::chrono::milliseconds(*number);
}

bool parse_flag(const char* name, const std::string& value) {
    if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
    if (value == "0" || value == "false" || value == "no" || value == "off") return false;
    throw InvalidOption(std::string(name) + "=" + value + ": expected 1 or 0");
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(const std::string& text) {
    std::uint64_t number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || end == text.data()) return std::nullopt;
    std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
    if (suffix.ends_with("iB"))
        suffix.remove_suffix(2);
    else if (suffix.ends_with("B") && suffix.size() == 2)
        suffix.remove_suffix(1);
    int shift = 0;
    if (suffix == "K")
        shift = 10;
    else if (suffix == "M")
        shift = 20;
    else if (suffix == "G")
        shift = 30;
    else if (suffix == "T")
        shift = 40;
    else if (!suffix.empty())
        return std::nullopt;
    if (shift && number > (~0ull >> shift)) return std::nullopt;
    return number << shift;
}

std::optional<TilePin> parse_tile_pin(std::string_view text) {
    TilePin pin;
    for (const std::string_view item : comma_list_items(text)) {
        const auto eq = item.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        const auto name = item.substr(0, eq);
        const auto value = item.substr(eq + 1);
        std::optional<int>* target = name == "bq"      ? &pin.block_q
                                     : name == "bk"    ? &pin.block_k
                                     : name == "waves" ? &pin.waves
                                                       : nullptr;
        int number = 0;
        auto [last, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
        if (!target || *target || ec != std::errc{} || last != value.data() + value.size() || number <= 0)
            return std::nullopt;
        *target = number;
    }
    if (pin.empty()) return std::nullopt;
    return pin;
}

std::string to_string(const TilePin& pin) {
    std::string text;
    const auto add = [&](const char* name, const std::optional<int>& value) {
        if (value) text += (text.empty() ? "" : ",") + std::string(name) + "=" + std::to_string(*value);
    };
    add("bq", pin.block_q);
    add("bk", pin.block_k);
    add("waves", pin.waves);
    return text;
}

Options Options::from_environment(const Overrides& overrides) {
    for (const auto& [name, value] : overrides)
        if (std::find(std::begin(setting_names), std::end(setting_names), name) == std::end(setting_names))
            throw InvalidOption(name + "=" + value + ": not a fa-jit setting");
    const auto environment = [&](const char* name) { return setting(overrides, name); };

    Options options;
    if (auto dir = environment("FAJIT_CACHE_DIR"))
        options.cache_dir = *dir;
    else if (auto xdg = environment("XDG_CACHE_HOME"))
        options.cache_dir = std::filesystem::path(*xdg) / "fa-jit";
    else if (auto home = environment("HOME"))
        options.cache_dir = std::filesystem::path(*home) / ".cache" / "fa-jit";

    if (auto size = environment("FAJIT_CACHE_MAX_SIZE")) {
        const auto bytes = parse_byte_size(*size);
        if (!bytes) throw InvalidOption("FAJIT_CACHE_MAX_SIZE=" + *size + ": expected bytes, e.g. 2G or 512M");
        options.cache_max_bytes = *bytes;
    }
    if (auto disable = environment("FAJIT_CACHE_DISABLE"))
        options.cache_disabled = parse_flag("FAJIT_CACHE_DISABLE", *disable);
    if (auto counters = environment("FAJIT_DEBUG_COUNTERS"))
        options.debug_counters = parse_flag("FAJIT_DEBUG_COUNTERS", *counters);
    if (auto dir = environment("FAJIT_TEMPLATE_DIR")) options.template_dir = *dir;
    if (auto count = environment("FAJIT_MAX_LOADED_KERNELS")) {
        const auto number = parse_whole_number<std::size_t>(*count);
        if (!number || *number == 0)
            throw InvalidOption("FAJIT_MAX_LOADED_KERNELS=" + *count + ": expected a count of kernels, at least 1");
        options.max_loaded_kernels = *number;
    }
    if (auto level = environment("FAJIT_LOG_LEVEL")) {
        static constexpr const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
        bool known = false;
        for (const char* candidate : levels) known |= *level == candidate;
        if (!known)
            throw InvalidOption("FAJIT_LOG_LEVEL=" + *level + ": expected trace, debug, info, warn, error or off");
        options.log_level = *level;
    }
    if (auto family = environment("FAJIT_FAMILY"); family && *family != "auto") {
        if (!find_family(*family))
            throw InvalidOption("FAJIT_FAMILY=" + *family + ": expected auto, " + family_names());
        options.family = *family;
    }
    if (auto fallback = environment("FAJIT_FORCE_FALLBACK"))
        options.force_fallback = parse_flag("FAJIT_FORCE_FALLBACK", *fallback);
    if (auto tile = environment("FAJIT_TILE")) {
        const auto pin = parse_tile_pin(*tile);
        if (!pin)
            throw InvalidOption("FAJIT_TILE=" + *tile +
                                ": expected positive bq=, bk= and/or waves=, comma-separated, "
                                "e.g. bq=64,bk=64,waves=4");
        options.tile = *pin;
    }
    if (auto strict = environment("FAJIT_STRICT")) options.strict = parse_flag("FAJIT_STRICT", *strict);
    if (auto check = environment("FAJIT_CHECK_INDICES"))
        options.check_indices = parse_flag("FAJIT_CHECK_INDICES", *check);
    if (auto maps = environment("FAJIT_TENSOR_MAPS")) options.tensor_maps = parse_flag("FAJIT_TENSOR_MAPS", *maps);
    if (auto programmatic = environment("FAJIT_PROGRAMMATIC_LAUNCH"))
        options.programmatic_launch = parse_flag("FAJIT_PROGRAMMATIC_LAUNCH", *programmatic);
    if (auto cluster = environment("FAJIT_CLUSTER_MERGE"))
        options.cluster_merge = parse_flag("FAJIT_CLUSTER_MERGE", *cluster);
    if (auto splits = environment("FAJIT_DECODE_SPLITS")) {
        const auto count = parse_whole_number<unsigned>(*splits);
        if (!count || *count > 64)
            throw InvalidOption("FAJIT_DECODE_SPLITS=" + *splits + ": expected 0 (plan per call) or a count of 1..64");
        options.decode_splits = static_cast<int>(*count);
    }

    if (auto remote = environment("FAJIT_REMOTE_CACHE")) {
        try {
            cache::parse_remote_address(*remote);
        } catch (const std::invalid_argument& error) {
            throw InvalidOption("FAJIT_REMOTE_CACHE=" + std::string(error.what()));
        }
        options.remote_cache = *remote;
    }
    if (auto key = environment("FAJIT_REMOTE_CACHE_KEY")) options.remote_cache_key = *key;
    if (auto timeout = environment("FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT"))
        options.remote_connect_timeout = parse_milliseconds("FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT", *timeout);
    if (auto timeout = environment("FAJIT_REMOTE_CACHE_TIMEOUT"))
        options.remote_operation_timeout = parse_milliseconds("FAJIT_REMOTE_CACHE_TIMEOUT", *timeout);
    if (auto backoff = environment("FAJIT_REMOTE_CACHE_BACKOFF"))
        options.remote_backoff = parse_milliseconds("FAJIT_REMOTE_CACHE_BACKOFF", *backoff);
    return options;
}

}  // namespace fajit
