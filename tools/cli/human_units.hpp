#pragma once
// Sizes and durations as operators type and read them: 512M, 7d, "3.1 MiB", "2h".
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fajit::cli {

// "90s", "30m", "12h", "7d", "2w": a whole number with one unit.
std::optional<std::chrono::seconds> parse_duration(const std::string& text);

// Binary units with three significant digits: "812 B", "3.14 KiB", "21.0 MiB".
std::string format_bytes(std::uint64_t bytes);

// The largest whole unit: "42s", "7m", "5h", "3d".
std::string format_age(std::chrono::seconds age);

}  // namespace fajit::cli
