#include "warm_report.hpp"

#include <cstdio>
#include <sstream>
#include <utility>

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
        if (result.cost) {
            totals.costed = true;
            if (result.cost->spills()) ++totals.spilling;
            if (!result.cost->error.empty()) ++totals.without_cost;
        }
        switch (result.outcome) {
            case WarmOutcome::compiled:
                ++totals.compiled;
                break;
            case WarmOutcome::cached:
                ++totals.cached;
                break;
            case WarmOutcome::not_stored:
                ++totals.not_stored;
                ++totals.not_stored_reasons[result.not_stored_reason];
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
    std::string reasons;
    for (const auto& [reason, count] : totals.not_stored_reasons)
        reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    table.add_row({"not stored", std::to_string(totals.not_stored), reasons});
    table.add_row({"failed", std::to_string(totals.failed), ""});
    if (totals.costed) {
        table.add_row({"spilling", std::to_string(totals.spilling), "registers spilled to memory (--isa)"});
        if (totals.without_cost) table.add_row({"no ISA report", std::to_string(totals.without_cost), ""});
    }
    table.add_row({"total", std::to_string(totals.compiled + totals.cached + totals.not_stored + totals.failed),
                   "wall time " + seconds_text(totals.wall_seconds) + " with " + std::to_string(totals.jobs) +
                       (totals.jobs == 1 ? " job" : " jobs")});
    table.print(out);
}

nlohmann::json warm_report_json(const std::vector<WarmResult>& results, const WarmTotals& totals) {
    nlohmann::json variants = nlohmann::json::array();
    for (const WarmResult& result : results) {
        nlohmann::json variant = {{"spec", to_string(result.spec)}, {"arch", result.spec.arch},
                                  {"family", result.spec.family},   {"outcome", to_string(result.outcome)},
                                  {"seconds", result.seconds},      {"compile_seconds", result.compile_seconds}};
        if (!result.key.empty()) variant["key"] = result.key;
        if (result.cost) add_kernel_cost(variant, *result.cost);
        if (result.outcome == WarmOutcome::failed) {
            variant["error"] = result.error;
            variant["log"] = result.log;
        }
        if (result.outcome == WarmOutcome::not_stored) {
            variant["reason"] = result.not_stored_reason;
            variant["error"] = result.error;
        }
        variants.push_back(std::move(variant));
    }
    return {{"variants", std::move(variants)},
            {"compiled", totals.compiled},
            {"cached", totals.cached},
            {"not_stored", totals.not_stored},
            {"not_stored_reasons", totals.not_stored_reasons},
            {"failed", totals.failed},
            {"total", results.size()},
            {"compile_seconds", totals.compile_seconds},
            {"wall_seconds", totals.wall_seconds},
            {"jobs", totals.jobs},
            {"spilling", totals.spilling},
            {"without_isa_report", totals.without_cost}};
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

void print_not_stored(const std::vector<WarmResult>& results, std::ostream& out) {
    struct Group {
        std::size_t count = 0;
        std::string example;
    };
    std::map<std::pair<std::string, std::string>, Group> groups;  // by reason and error
    for (const WarmResult& result : results) {
        if (result.outcome != WarmOutcome::not_stored) continue;
        Group& group = groups[{result.not_stored_reason, result.error}];
        if (group.count++ == 0) group.example = to_string(result.spec);
    }
    for (const auto& [cause, group] : groups)
        out << "not stored: " << group.count << (group.count == 1 ? " variant" : " variants") << ", " << cause.first
            << " (" << cause.second << "), e.g. " << group.example << "\n";
}

void print_costs(const std::vector<WarmResult>& results, std::ostream& out) {
    for (const WarmResult& result : results) {
        if (!result.cost) continue;
        if (result.cost->spills())
            out << "spills: " << to_string(result.spec) << "\n  " << result.cost->summary() << "\n";
        else if (!result.cost->error.empty())
            out << "no ISA report: " << to_string(result.spec) << "\n  " << result.cost->error << "\n";
    }
}

}  // namespace fajit::cli
