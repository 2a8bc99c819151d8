#pragma once
// What a compiled kernel costs, for `compile --isa` and `warm --isa`: registers, spills and
// shared memory (LDS), from the code object's metadata and disassembly on AMD targets
// (isa_report.hpp: needs LLVM's readelf and objdump) or from ptxas's lines in the compile
// log on NVIDIA ones (ptxas_report.hpp: the CUDA backend compiles with ptxas -v).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "codegen/isa_report.hpp"
#include "codegen/ptxas_report.hpp"
#include "fajit/runtime.hpp"

namespace fajit::cli {

struct KernelCost {
    std::optional<IsaReport> isa;      // AMD targets
    std::optional<PtxasReport> ptxas;  // NVIDIA targets
    std::string error;                 // why there is neither report

    bool spills() const;
    std::string summary() const;  // one line: registers, spills, shared memory
};

KernelCost kernel_cost(const CompiledKernel& kernel);

// Adds "isa" (AMD), "ptxas" (NVIDIA) or "isa_error" to a JSON object.
void add_kernel_cost(nlohmann::json& object, const KernelCost& cost);

}  // namespace fajit::cli
