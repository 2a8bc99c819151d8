#include "codegen/ptxas_report.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace fajit {

namespace {

// The decimal number just before `suffix` in line ("168 registers" -> 168), or -1.
long long number_before(std::string_view line, std::string_view suffix) {
    const std::size_t at = line.find(suffix);
    if (at == std::string_view::npos) return -1;
    std::size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    if (begin == at) return -1;
    return std::stoll(std::string(line.substr(begin, at - begin)));
}

// The text between `opening` and the next quote ("for 'sm_90a'" -> sm_90a), or empty.
std::string quoted_after(std::string_view line, std::string_view opening) {
    const std::size_t at = line.find(opening);
    if (at == std::string_view::npos) return {};
    const std::string_view rest = line.substr(at + opening.size());
    return std::string(rest.substr(0, rest.find('\'')));
}

}  // namespace

std::optional<PtxasReport> ptxas_report_from_log(std::string_view log) {
    // ptxas -v writes, per entry function:
    //   ptxas info    : Compiling entry function '<name>' for 'sm_90a'
    //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    //   ptxas info    : Used 168 registers, used 16 barriers, 1024 bytes smem, ...
    // ("used N barriers" from sm_90 on; "bytes smem" only where there is static shared memory).
    PtxasReport report;
    while (!log.empty()) {
        const std::size_t end = std::min(log.find('\n'), log.size());
        const std::string_view line = log.substr(0, end);
        log.remove_prefix(std::min(end + 1, log.size()));
        if (line.find("Potential Performance Loss") != std::string_view::npos) report.advisories.emplace_back(line);
        if (report.registers >= 0) continue;  // the first entry's report is complete
        if (line.find("Compiling entry function '") != std::string_view::npos) {
            report.kernel = quoted_after(line, "Compiling entry function '");
            report.target = quoted_after(line, "' for '");
        } else if (report.kernel.empty()) {
            continue;
        } else if (line.find(" bytes stack frame") != std::string_view::npos) {
            report.stack_frame_bytes = number_before(line, " bytes stack frame");
            report.spill_store_bytes = number_before(line, " bytes spill stores");
            report.spill_load_bytes = number_before(line, " bytes spill loads");
        } else if (line.find("Used ") != std::string_view::npos) {
            report.registers = static_cast<int>(number_before(line, " registers"));
            report.barriers = static_cast<int>(number_before(line, " barriers"));
            report.shared_bytes = std::max(0LL, number_before(line, " bytes smem"));
        }
    }
    if (report.registers < 0) return std::nullopt;
    return report;
}

std::string format_ptxas_report(const PtxasReport& report) {
    std::ostringstream text;
    text << "ptxas report for " << report.kernel << " (" << report.target << ")\n"
         << "  registers " << report.registers;
    if (report.barriers >= 0) text << ", barriers " << report.barriers;
    text << ", static shared memory " << report.shared_bytes << " bytes\n"
         << "  stack frame " << report.stack_frame_bytes << " bytes, spill stores " << report.spill_store_bytes
         << " bytes, spill loads " << report.spill_load_bytes << " bytes\n";
    for (const auto& advisory : report.advisories) text << "  advisory: " << advisory << "\n";
    return text.str();
}

}  // namespace fajit
