#pragma once
// What warm prints once it is done: a ccache-style summary, or the same as JSON, the first
// lines of each failure's compiler log, and why variants are not stored.
#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "warm_runner.hpp"

namespace fajit::cli {

struct WarmTotals {
    std::size_t compiled = 0, cached = 0, not_stored = 0, failed = 0;
    std::map<std::string, std::size_t> not_stored_reasons;  // how many variants for each reason
    double compile_seconds = 0.0;  // summed over variants, so it exceeds the wall time with several jobs
    double wall_seconds = 0.0;
    int jobs = 1;
    bool costed = false;  // --isa: the counts below are meant
    std::size_t spilling = 0, without_cost = 0;
};

WarmTotals total_up(const std::vector<WarmResult>& results, double wall_seconds, int jobs);

void print_warm_summary(const WarmTotals& totals, std::ostream& out);
nlohmann::json warm_report_json(const std::vector<WarmResult>& results, const WarmTotals& totals);
// Each failed variant, its error and the first log_lines lines of its compiler log.
void print_failures(const std::vector<WarmResult>& results, std::size_t log_lines, std::ostream& out);
// The variants not stored, one line per reason and error (a full disk fails them all alike),
// naming how many and one of them; --json lists every one.
void print_not_stored(const std::vector<WarmResult>& results, std::ostream& out);
// With --isa: each variant that spills, with its cost, and why a variant has no report.
void print_costs(const std::vector<WarmResult>& results, std::ostream& out);

}  // namespace fajit::cli
