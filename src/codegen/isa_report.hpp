#pragma once
// What an AMD code object costs: registers, LDS, scratch and the instructions that
// matter for attention kernels, read from the object's metadata notes and its
// disassembly. Pure host code; it runs LLVM's readelf and objdump (from PATH,
// /usr/lib/llvm-*/bin or /opt/rocm/llvm/bin), so no GPU or ROCm runtime is needed.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fajit {

struct IsaReport {
    std::string kernel;            // symbol of the (first) kernel in the object
    std::string processor;         // e.g. gfx1151
    int vgprs = -1;                // .vgpr_count
    int sgprs = -1;                // .sgpr_count
    int agprs = -1;                // .agpr_count where the target has them, else -1
    long long lds_bytes = -1;      // .group_segment_fixed_size (static LDS)
    long long scratch_bytes = -1;  // .private_segment_fixed_size (stack, spills)
    int vgpr_spills = -1;          // .vgpr_spill_count
    int sgpr_spills = -1;          // .sgpr_spill_count
    int wave_size = -1;            // .wavefront_size
    int instructions = 0;          // every disassembled instruction
    int wmma_instructions = 0;     // v_wmma_*
    int mfma_instructions = 0;     // v_mfma_*
    int barrier_instructions = 0;  // s_barrier
    int lds_instructions = 0;      // ds_*
    // The loop whose body holds the most matrix instructions (a flash kernel's key
    // loop): the s_barrier and matrix instructions between its head and its backward
    // branch. -1 when the code has no loop with a matrix instruction.
    int loop_barriers = -1;
    int loop_matrix_instructions = -1;
    std::string tools;  // the readelf and objdump used
};

// Reports on one code object: a raw AMDGPU ELF or a clang offload bundle holding
// one. arch may carry feature suffixes (gfx90a:xnack-). Returns nullopt and sets
// *error when the object cannot be read or the LLVM tools are not found.
std::optional<IsaReport> isa_report(std::span<const std::byte> code, std::string_view arch, std::string* error);

// The same from text already produced by `llvm-readelf --notes` and `llvm-objdump -d`
// (exposed for tests and for callers that run the tools themselves).
IsaReport isa_report_from_text(std::string_view notes, std::string_view disassembly);

// Human-readable multi-line summary.
std::string format_isa_report(const IsaReport&);

// Where the tools were looked for and found: empty path when missing.
std::string find_llvm_tool(std::string_view name);

}  // namespace fajit
