#pragma once
// What the compile suites share: the backend for a target, compiling a spec straight
// through it (the suites check compilers, so the cache stays out of the way), and the
// sweep of families x archs that reads every variant for spills.
#include <functional>
#include <span>
#include <string>
#include <utility>
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

// A variant compiled and read for spills: NVIDIA through ptxas -v, AMD through the code
// object's notes (which must exist and name the arch's wave size). problem says why it did
// not compile, or what is wrong with the kernel it compiled; empty when nothing is.
struct SpillCheck {
    bool compiled = false;
    std::string problem;
    bool spilled = false;  // the problem is a spill (or scratch) and nothing else
};
SpillCheck compile_and_check_spills(const KernelSpec&, const Backend&);

using Target = std::pair<std::string, std::string>;  // a family and an arch it serves
using SpecsOf = std::function<std::vector<KernelSpec>(const std::string& family, const std::string& arch)>;

// Whether a spill fails the test or is printed: the dispatcher's tiles must not spill,
// while a tile set by hand (FAJIT_TILE, a manifest) may, since it still runs.
enum class Spills { fail, are_printed };

// For each target whose compiler is present: specs_of(family, arch), at least at_least of
// them, compiled on every core and each checked as compile_and_check_spills does, through
// doctest's assertions; returns how many compiled. A target without its compiler, or whose
// family FAJIT_TEST_FAMILIES leaves out, is skipped with the reason printed.
int compile_targets(std::span<const Target> targets, const SpecsOf& specs_of, std::size_t at_least, Spills spills);

}  // namespace fajit::testing
