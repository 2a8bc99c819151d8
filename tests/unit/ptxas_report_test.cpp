// The ptxas report's parsing of NVRTC logs: the lines ptxas -v writes for an entry
// function, with and without static shared memory and barrier counts, its advisories,
// and a log with no report. Host code only: no compiler runs (tests/cli runs one).
#include <doctest/doctest.h>

#include <string>

#include "codegen/ptxas_report.hpp"

using namespace fajit;

TEST_CASE("ptxas report reads an sm_90a entry's registers, barriers, spills and advisories") {
    const std::string log = R"(ptxas info    : 157 bytes gmem
ptxas info    : Compiling entry function '_Z13fa_wgmma_sm90I10fajit_specEv9fa_params' for 'sm_90a'
ptxas info    : Function properties for _Z13fa_wgmma_sm90I10fajit_specEv9fa_params
ptxas         .     24 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers
ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of Extern calls in the function '_Z13fa_wgmma_sm90I10fajit_specEv9fa_params'.
ptxas info    : Compile time = 469.732 ms
)";
    const auto report = ptxas_report_from_log(log);
    REQUIRE(report);
    CHECK(report->kernel == "_Z13fa_wgmma_sm90I10fajit_specEv9fa_params");
    CHECK(report->target == "sm_90a");
    CHECK(report->registers == 168);
    CHECK(report->barriers == 16);
    CHECK(report->shared_bytes == 0);  // dynamic shared memory only
    CHECK(report->stack_frame_bytes == 24);
    CHECK(report->spill_store_bytes == 12);
    CHECK(report->spill_load_bytes == 16);
    CHECK(report->spills());
    REQUIRE(report->advisories.size() == 1);
    CHECK(report->advisories[0].find("(C7515)") != std::string::npos);
    const std::string text = format_ptxas_report(*report);
    CHECK(text.find("registers 168") != std::string::npos);
    CHECK(text.find("spill stores 12 bytes") != std::string::npos);
    CHECK(text.find("advisory: ") != std::string::npos);
}

TEST_CASE("ptxas report reads static shared memory, and the first entry's lines only") {
    const std::string log = R"(ptxas info    : 48 bytes gmem, 120 bytes cmem[4]
ptxas info    : Compiling entry function 'first' for 'sm_80'
ptxas info    : Function properties for first
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 102 registers, 1024 bytes smem, 1088 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compiling entry function 'second' for 'sm_80'
ptxas info    : Function properties for second
ptxas         .     8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, 2048 bytes smem
)";
    const auto report = ptxas_report_from_log(log);
    REQUIRE(report);
    CHECK(report->kernel == "first");
    CHECK(report->registers == 102);
    CHECK(report->barriers == -1);  // sm_80's ptxas does not count them
    CHECK(report->shared_bytes == 1024);
    CHECK(report->spill_store_bytes == 0);
    CHECK_FALSE(report->spills());
    CHECK(report->advisories.empty());
}

TEST_CASE("a log without ptxas -v output has no report") {
    CHECK_FALSE(ptxas_report_from_log(""));
    CHECK_FALSE(ptxas_report_from_log("warning: some NVRTC warning\n"));
    // An entry whose "Used" line never came (a cut log) is no report either.
    CHECK_FALSE(ptxas_report_from_log("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"));
}
