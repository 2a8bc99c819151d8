#pragma once
// What the compile suites share: the backend for a target, and compiling a spec
// straight through it (the suites check compilers, so the cache stays out of the way).
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "codegen/ptxas_report.hpp"
#include "fajit/kernel_spec.hpp"

namespace fajit::testing {

// The backend compiling for arch, or nullptr after printing why the caller must skip.
const Backend* compiler_for(const std::string& arch);

CompileResult compile_directly(const KernelSpec&, const Backend&, std::vector<std::string> options = {});

// An NVRTC compile, and what ptxas said of the kernel (the CUDA backend runs ptxas -v):
// report.registers stays -1 where the log has no report.
struct PtxasCompile {
    bool ok = false;
    std::string log;
    PtxasReport report;
};
PtxasCompile compile_with_ptxas_report(const KernelSpec&, const Backend&);

// work(0) .. work(count - 1) on a thread per core: the compiles are most of a compile
// suite's time, and each is independent.
void on_every_core(std::size_t count, const std::function<void(std::size_t)>& work);

}  // namespace fajit::testing
