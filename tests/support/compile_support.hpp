#pragma once
// What the compile suites share: the backend for a target, and compiling a spec
// straight through it (the suites check compilers, so the cache stays out of the way).
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "fajit/kernel_spec.hpp"

namespace fajit::testing {

// The backend compiling for arch, or nullptr after printing why the caller must skip.
const Backend* compiler_for(const std::string& arch);

CompileResult compile_directly(const KernelSpec&, const Backend&, std::vector<std::string> options = {});

// An NVRTC compile with ptxas -v, and what ptxas said of the kernel (the only function in
// the program): "Used N registers" and "S bytes spill stores, L bytes spill loads".
struct PtxasReport {
    bool ok = false;
    int registers = -1;
    int spill_stores = -1;
    int spill_loads = -1;
    std::string log;
};
PtxasReport compile_with_ptxas_report(const KernelSpec&, const Backend&);

// work(0) .. work(count - 1) on a thread per core: the compiles are most of a compile
// suite's time, and each is independent.
void on_every_core(std::size_t count, const std::function<void(std::size_t)>& work);

}  // namespace fajit::testing
