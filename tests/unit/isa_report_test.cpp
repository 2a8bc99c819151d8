// The ISA report's parsing of LLVM's readelf notes and objdump text, and its refusal of
// what is no code object. Host code only: no compiler or tool runs.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "codegen/isa_report.hpp"

using namespace fajit;

TEST_CASE("ISA report parses readelf notes and objdump text") {
    const std::string notes = R"(Displaying notes found in: .note
  Owner                Data size 	Description
  AMDGPU               0x00000a1c	NT_AMDGPU_METADATA (AMDGPU Metadata)
    amdhsa.kernels:
      - .agpr_count:     0
        .args:
          - .offset:         0
            .size:           168
            .value_kind:     by_value
        .group_segment_fixed_size: 35840
        .kernarg_segment_size: 168
        .name:           kernel_a
        .private_segment_fixed_size: 0
        .sgpr_count:     40
        .sgpr_spill_count: 0
        .symbol:         kernel_a.kd
        .vgpr_count:     212
        .vgpr_spill_count: 0
        .wavefront_size: 32
    amdhsa.target:   amdgcn-amd-amdhsa--gfx1151
)";
    const std::string disassembly = R"(
0000000000001900 <kernel_a>:
	s_load_b128 s[4:7], s[0:1], 0x0                            // 000000001900: F4080100 F8000000
	s_barrier                                                  // 000000001908: BFBD0000
	ds_load_b128 v[0:3], v1                                    // 00000000190C: DBFC0000 00000001
	v_wmma_f32_16x16x16_f16 v[8:15], v[16:23], v[24:31], v[8:15] // 000000001914: CC404008 1C222110
	s_barrier                                                  // 00000000191C: BFBD0000
	s_cbranch_scc1 65532                                       // 000000001920: BFA2FFFC <kernel_a+0x14>
	ds_store_b32 v0, v1                                        // 000000001924: D8340000 00000100
	s_endpgm                                                   // 000000001928: BFB00000
)";
    const IsaReport report = isa_report_from_text(notes, disassembly);
    CHECK(report.kernel == "kernel_a");
    CHECK(report.vgprs == 212);
    CHECK(report.sgprs == 40);
    CHECK(report.agprs == 0);
    CHECK(report.lds_bytes == 35840);
    CHECK(report.scratch_bytes == 0);
    CHECK(report.vgpr_spills == 0);
    CHECK(report.wave_size == 32);
    CHECK(report.instructions == 8);
    CHECK(report.wmma_instructions == 1);
    CHECK(report.barrier_instructions == 2);
    CHECK(report.lds_instructions == 2);
    // The branch at 0x1920 jumps 4 words back from the next instruction, to the v_wmma
    // at 0x1914: the loop holds it and the second s_barrier only.
    CHECK(report.loop_matrix_instructions == 1);
    CHECK(report.loop_barriers == 1);
    CHECK(format_isa_report(report).find("35840") != std::string::npos);
}

TEST_CASE("ISA report refuses what is not a code object") {
    const std::vector<std::byte> junk(64, std::byte{0x42});
    std::string error;
    CHECK_FALSE(isa_report(junk, "gfx1151", &error).has_value());
    CHECK(error.find("not an ELF") != std::string::npos);
}

TEST_CASE("ISA report reads a CDNA object's AGPRs and counts v_mfma in its key loop") {
    const std::string notes = R"(    amdhsa.kernels:
      - .agpr_count:     48
        .group_segment_fixed_size: 35840
        .name:           kernel_b
        .private_segment_fixed_size: 0
        .sgpr_count:     65
        .symbol:         kernel_b.kd
        .vgpr_count:     172
        .wavefront_size: 64
)";
    const std::string disassembly = R"(
0000000000001000 <kernel_b>:
	s_barrier                                                  // 000000001000: BF8A0000
	v_mfma_f32_16x16x16f16 a[0:3], v[2:3], v[4:5], a[0:3]      // 000000001004: D3CD8000 04020902
	v_mfma_f32_16x16x16f16 a[4:7], v[6:7], v[4:5], a[4:7]      // 00000000100C: D3CD8004 04120906
	s_cbranch_scc0 65531                                       // 000000001014: BF84FFFB <kernel_b+0x4>
	v_mfma_f32_16x16x16f16 a[0:3], v[2:3], v[4:5], a[0:3]      // 000000001018: D3CD8000 04020902
	s_endpgm                                                   // 000000001020: BF810000
)";
    const IsaReport report = isa_report_from_text(notes, disassembly);
    CHECK(report.agprs == 48);
    CHECK(report.vgprs == 172);
    CHECK(report.wave_size == 64);
    CHECK(report.mfma_instructions == 3);
    CHECK(report.wmma_instructions == 0);
    // The branch at 0x1014 goes 5 words back from 0x1018, to 0x1004: the loop holds the
    // first two v_mfma and no barrier.
    CHECK(report.loop_matrix_instructions == 2);
    CHECK(report.loop_barriers == 0);
    CHECK(format_isa_report(report).find("(+48 agprs)") != std::string::npos);
}
