#pragma once
// Facts derived from a full target name. gfx* names an AMD target (HIPRTC), sm_* an
// NVIDIA one (NVRTC); anything else is rejected by validation.
#include <string>
#include <string_view>

namespace fajit {

enum class Vendor { amd, nvidia, unknown };

Vendor vendor_of(std::string_view arch);
// Empty when arch names a target fa-jit compiles for; else why not, saying what is accepted.
// AMD: an LLVM target ID in canonical form, a processor of fa-jit's table followed by the
// target features it takes, each at most once, in alphabetical order, each + or -
// (gfx942:sramecc+:xnack-). NVIDIA: sm_ and a compute capability from 50 (sm_80, sm_120),
// with the suffix a for an architecture-specific target from sm_90 on (sm_90a).
std::string target_name_error(std::string_view arch);
// The processor without feature suffixes: "gfx90a:sramecc+:xnack-" -> "gfx90a".
std::string_view processor_of(std::string_view arch);
// Lanes per wave: 64 on gfx9 (GCN/CDNA), 32 on gfx10+ and NVIDIA.
int wave_size(std::string_view arch);
bool is_gfx11(std::string_view arch);
// The CDNA targets with 16x16x16 MFMA in f16 and bf16 (bf16_1k): gfx90a (MI200),
// gfx940, gfx941 and gfx942 (MI300).
bool is_cdna_mfma(std::string_view arch);
// The SM number of an NVIDIA target ("sm_90a" -> 90), 0 when it has none.
int sm_version(std::string_view arch);

}  // namespace fajit
