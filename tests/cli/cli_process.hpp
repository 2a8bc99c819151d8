#pragma once
// Runs the fa-jit binary in a child process and captures what it prints.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fajit::cli_test {

struct CliRun {
    int exit_code = -1;  // the child's exit status; -1 if it did not exit normally
    std::string out;
    std::string err;
    double seconds = 0.0;
};

// Runs FAJIT_CLI_PATH with args. environment entries are set (or, with an empty value,
// removed) on top of this process's environment. Output is collected in files under
// scratch, so a chatty child never blocks on a full pipe.
CliRun run_cli(const std::vector<std::string>& args, const std::filesystem::path& scratch,
               const std::map<std::string, std::string>& environment = {});

}  // namespace fajit::cli_test
