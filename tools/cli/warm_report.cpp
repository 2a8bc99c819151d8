#include "warm_report.hpp"

#include <cstdio>
#include <sstream>

#include "text_table.hpp"

namespace fajit::cli {
namespace {

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", seconds);
    return text;
}

}  // namespace

WarmTotals total_up(const std::vector<WarmResult>& results, double wall_seconds, int jobs) {
    WarmTotals totals;
    totals.wall_seconds = wall_seconds;
    totals.jobs = jobs;
    for (const WarmResult& result : results) {
        totals.compile_seconds += result.compile_seconds;
        switch (result.outcome) {
            case WarmOutcome::compiled:
                ++totals.compiled;
                break;
            case WarmOutcome::cached:
                ++totals.cached;
                break;
            case WarmOutcome::failed:
                ++totals.failed;
                break;
        }
    }
    return totals;
}

void print_warm_summary(const WarmTotals& totals, std::ostream& out) {
    using Align = TextTable::Align;
    TextTable table({Align::left, Align::right, Align::left});
    table.add_row(
        {"compiled", std::to_string(totals.compiled), "compile time " + seconds_text(totals.compile_seconds)});
    table.add_row({"already cached", std::to_string(totals.cached), ""});
    table.add_row({"failed", std::to_string(totals.failed), ""});
    table.add_row({"total", std::to_string(totals.compiled + totals.cached + totals.failed),
                   "wall time " + seconds_text(totals.wall_seconds) + " with " + std::to_string(totals.jobs) +
                       (totals.jobs == 1 ? " job" : " jobs")});
    table.print(out);
}

nlohmann::json warm_report_json(const std::vector<WarmResult>& results, const WarmTotals& totals) {
    nlohmann::json variants = nlohmann::json::array();
    for (const WarmResult& result : results) {
        nlohmann::json variant = {{"spec", to_string(result.spec)},
                                  {"arch", result.spec.arch},
                                  {"family", result.spec.family},
                                  {"outcome", to_string(result.outcome)},
                                  {"seconds", result.seconds},
                                  {"compile_seconds", result.compile_seconds}};
        if (!result.key.empty()) variant["key"] = result.key;
        if (result.outcome == WarmOutcome::failed) {
            variant["error"] = result.error;
            variant["log"] = result.log;
        }
        variants.push_back(std::move(variant));
    }
    return {{"variants", std::move(variants)},
            {"compiled", totals.compiled},
            {"cached", totals.cached},
            {"failed", totals.failed},
            {"total", results.size()},
            {"compile_seconds", totals.compile_seconds},
            {"wall_seconds", totals.wall_seconds},
            {"jobs", totals.jobs}};
}

void print_failures(const std::vector<WarmResult>& results, std::size_t log_lines, std::ostream& out) {
    for (const WarmResult& result : results) {
        if (result.outcome != WarmOutcome::failed) continue;
        out << "failed: " << to_string(result.spec) << "\n  " << result.error << "\n";
        std::istringstream log(result.log);
        std::string line;
        std::size_t shown = 0;
        for (; shown < log_lines && std::getline(log, line); ++shown) out << "    " << line << "\n";
        if (std::getline(log, line)) out << "    ... (fa-jit compile SPEC prints the whole log)\n";
    }
}

}  // namespace fajit::cli
