#pragma once
// What warm prints once it is done: a ccache-style summary, or the same as JSON, and the
// first lines of each failure's compiler log.
#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

#include "warm_runner.hpp"

namespace fajit::cli {

struct WarmTotals {
    std::size_t compiled = 0, cached = 0, failed = 0;
    double compile_seconds = 0.0;  // summed over variants, so it exceeds the wall time with several jobs
    double wall_seconds = 0.0;
    int jobs = 1;
};

WarmTotals total_up(const std::vector<WarmResult>& results, double wall_seconds, int jobs);

void print_warm_summary(const WarmTotals& totals, std::ostream& out);
nlohmann::json warm_report_json(const std::vector<WarmResult>& results, const WarmTotals& totals);
// Each failed variant, its error and the first log_lines lines of its compiler log.
void print_failures(const std::vector<WarmResult>& results, std::size_t log_lines, std::ostream& out);

}  // namespace fajit::cli
