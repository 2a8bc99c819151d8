#pragma once
// What an NVIDIA kernel costs, as ptxas said it: the CUDA backend compiles with ptxas -v,
// so the log every cache entry keeps carries the kernel's registers, stack, spills and
// static shared memory, and any advisory of lost performance (wgmma serialized, ...).
// Pure text parsing: no GPU or CUDA library is needed to read a report.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fajit {

struct PtxasReport {
    std::string kernel;          // mangled name of the (first) entry function
    std::string target;          // e.g. sm_90a
    int registers = -1;          // "Used N registers"
    int barriers = -1;           // "used N barriers", where ptxas says it (sm_90 on), else -1
    long long shared_bytes = 0;  // static shared memory ("N bytes smem"; dynamic is not in it)
    long long stack_frame_bytes = -1;
    long long spill_store_bytes = -1;
    long long spill_load_bytes = -1;
    std::vector<std::string> advisories;  // "Potential Performance Loss" lines, as ptxas wrote them

    bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

// The report on the first entry function in a log of `ptxas -v` output; nullopt when the
// log has none (compiled without -v, or not by NVRTC).
std::optional<PtxasReport> ptxas_report_from_log(std::string_view log);

// Human-readable multi-line summary.
std::string format_ptxas_report(const PtxasReport&);

}  // namespace fajit
