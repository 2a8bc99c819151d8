#include "human_units.hpp"

#include <charconv>
#include <cstdio>
#include <string_view>

namespace fajit::cli {

std::optional<std::chrono::seconds> parse_duration(const std::string& text) {
    std::int64_t count = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec != std::errc{} || end == text.data() || count < 0) return std::nullopt;
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    std::int64_t unit_seconds = 0;
    if (unit == "s")
        unit_seconds = 1;
    else if (unit == "m")
        unit_seconds = 60;
    else if (unit == "h")
        unit_seconds = 3600;
    else if (unit == "d")
        unit_seconds = 86400;
    else if (unit == "w")
        unit_seconds = 7 * 86400;
    else
        return std::nullopt;
    if (count > INT64_MAX / unit_seconds) return std::nullopt;
    return std::chrono::seconds(count * unit_seconds);
}

std::string format_bytes(std::uint64_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    return text;
}

std::string format_age(std::chrono::seconds age) {
    const std::int64_t seconds = age.count() < 0 ? 0 : age.count();
    if (seconds < 60) return std::to_string(seconds) + "s";
    if (seconds < 3600) return std::to_string(seconds / 60) + "m";
    if (seconds < 86400) return std::to_string(seconds / 3600) + "h";
    return std::to_string(seconds / 86400) + "d";
}

}  // namespace fajit::cli
