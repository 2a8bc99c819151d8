#pragma once
// KernelSpec: everything a kernel is specialized on. Run-time sizes (batch, heads,
// lengths, strides, scale) are kernel arguments and deliberately not part of it.
#include <optional>
#include <string>
#include <string_view>

namespace fajit {

enum class DType { f16, bf16, f32 };
enum class CausalMode { none, top_left, bottom_right };

std::string_view to_string(DType);
std::string_view to_string(CausalMode);
std::optional<DType> parse_dtype(std::string_view);
std::optional<CausalMode> parse_causal(std::string_view);

struct KernelSpec {
    // The kernel family by name, as spec text spells it; the library's family registry
    // lists them (fa-jit emit --help, or an error from parse_spec naming the choices).
    std::string family;
    int head_dim = 128;
    DType dtype = DType::f16;
    int block_q = 4;   // query rows per thread block
    int block_k = 64;  // keys per block step; the rescale decision is made once per step
    int waves = 4;     // waves (warps) per thread block
    float rescale_margin = 0.0f;
    CausalMode causal = CausalMode::none;
    std::string arch;  // full target name with features, e.g. gfx942:sramecc+:xnack- or sm_90a

    bool operator==(const KernelSpec&) const = default;
};

// The canonical text form, e.g.
//   family=scalar,d=128,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=bottom-right,arch=gfx1151
// arch comes last so the variable-length target name ends the line.
std::string to_string(const KernelSpec&);

struct SpecParseResult {
    std::optional<KernelSpec> spec;
    std::string error;  // names the offending field
};
// Accepts fields in any order; family, d, dtype and arch are required, tile fields
// default to the family's defaults. The result is validated.
SpecParseResult parse_spec(std::string_view text);

// Empty when the spec is valid, else a message naming the field, its value and the rule.
std::string validate(const KernelSpec&);

// Tile defaults of a family for a head dim and arch.
KernelSpec with_family_defaults(KernelSpec);

}  // namespace fajit
