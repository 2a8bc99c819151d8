#include "isa_json.hpp"

namespace fajit::cli {

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

}  // namespace fajit::cli
