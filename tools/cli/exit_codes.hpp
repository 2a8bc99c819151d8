#pragma once
// The exit statuses every subcommand shares, and the error type that maps to "usage".
#include <stdexcept>

namespace fajit::cli {

inline constexpr int exit_success = 0;
inline constexpr int exit_usage = 1;   // the command line, a spec, a manifest or the environment is wrong
inline constexpr int exit_failed = 2;  // the operation ran but failed: a compile failed, corruption was found

// Thrown for anything the user must fix in what they asked for; main() turns it into exit_usage.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace fajit::cli
