#include "kernel_cost.hpp"

#include "spec/arch.hpp"

namespace fajit::cli {
namespace {

nlohmann::json to_json(const IsaReport& report) {
    return {{"kernel", report.kernel},
            {"processor", report.processor},
            {"vgprs", report.vgprs},
            {"sgprs", report.sgprs},
            {"agprs", report.agprs},
            {"lds_bytes", report.lds_bytes},
            {"scratch_bytes", report.scratch_bytes},
            {"vgpr_spills", report.vgpr_spills},
            {"sgpr_spills", report.sgpr_spills},
            {"wave_size", report.wave_size},
            {"instructions", report.instructions},
            {"wmma_instructions", report.wmma_instructions},
            {"mfma_instructions", report.mfma_instructions},
            {"barrier_instructions", report.barrier_instructions},
            {"lds_instructions", report.lds_instructions},
            {"loop_barriers", report.loop_barriers},
            {"loop_matrix_instructions", report.loop_matrix_instructions},
            {"tools", report.tools}};
}

nlohmann::json to_json(const PtxasReport& report) {
    return {{"kernel", report.kernel},
            {"target", report.target},
            {"registers", report.registers},
            {"barriers", report.barriers},
            {"shared_bytes", report.shared_bytes},
            {"stack_frame_bytes", report.stack_frame_bytes},
            {"spill_store_bytes", report.spill_store_bytes},
            {"spill_load_bytes", report.spill_load_bytes},
            {"advisories", report.advisories}};
}

}  // namespace

bool KernelCost::spills() const {
    if (isa) return isa->vgpr_spills > 0 || isa->sgpr_spills > 0 || isa->scratch_bytes > 0;
    if (ptxas) return ptxas->spills();
    return false;
}

std::string KernelCost::summary() const {
    if (isa)
        return std::to_string(isa->vgprs) + " VGPRs, " + std::to_string(isa->sgprs) + " SGPRs, " +
               std::to_string(isa->vgpr_spills) + " VGPRs and " + std::to_string(isa->sgpr_spills) +
               " SGPRs spilled, " + std::to_string(isa->scratch_bytes) + " bytes of scratch, " +
               std::to_string(isa->lds_bytes) + " bytes of LDS";
    if (ptxas)
        return std::to_string(ptxas->registers) + " registers, " + std::to_string(ptxas->spill_store_bytes) +
               " bytes of spill stores, " + std::to_string(ptxas->spill_load_bytes) + " of spill loads, " +
               std::to_string(ptxas->shared_bytes) + " bytes of static shared memory" +
               (ptxas->advisories.empty() ? "" : ", " + std::to_string(ptxas->advisories.size()) + " advisories");
    return "no report: " + error;
}

KernelCost kernel_cost(const CompiledKernel& kernel) {
    KernelCost cost;
    if (vendor_of(kernel.spec.arch) == Vendor::amd) {
        cost.isa = isa_report(kernel.code, kernel.spec.arch, &cost.error);
    } else {
        cost.ptxas = ptxas_report_from_log(kernel.log);
        if (!cost.ptxas)
            cost.error = "the cache entry " + kernel.key +
                         " has no ptxas report in its log (compiled by an older fa-jit); remove it (fa-jit clear "
                         "--arch " +
                         kernel.spec.arch + ") and compile again";
    }
    return cost;
}

void add_kernel_cost(nlohmann::json& object, const KernelCost& cost) {
    if (cost.isa) object["isa"] = to_json(*cost.isa);
    if (cost.ptxas) object["ptxas"] = to_json(*cost.ptxas);
    if (!cost.error.empty()) object["isa_error"] = cost.error;
}

}  // namespace fajit::cli
