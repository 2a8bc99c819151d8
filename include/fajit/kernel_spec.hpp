#pragma once
// KernelSpec: everything a kernel is specialized on. Run-time sizes (batch, heads,
// lengths, strides, scale) are kernel arguments and deliberately not part of it.
#include <optional>
#include <string>
#include <string_view>

namespace fajit {

// e4m3 is OCP FP8 E4M3 (finite, max 448): q, k and v only, with an f16 or bf16 output
// (KernelSpec::out_dtype) and f32 descale factors per call (AttentionArgs::descale).
enum class DType { f16, bf16, f32, e4m3 };
enum class CausalMode { none, top_left, bottom_right };
// How a call's sequences and their K/V are laid out (AttentionArgs::sequences):
//   dense   one length for every sequence; q, k, v and o are [batch, heads, length, d] by strides
//   ragged  q and o packed [total_q, heads, d] and k, v packed [total_k, heads_kv, d], with
//           cumulative offsets per sequence (FlashAttention's varlen form)
//   paged   q and o packed as for ragged; k and v in pages [num_pages, page_size, heads_kv, d]
//           (or heads first, by strides) found through a block table (vLLM's KV cache)
enum class KvLayout { dense, ragged, paged };

std::string_view to_string(DType);
std::string_view to_string(CausalMode);
std::string_view to_string(KvLayout);
std::optional<DType> parse_dtype(std::string_view);
std::optional<CausalMode> parse_causal(std::string_view);
std::optional<KvLayout> parse_kv_layout(std::string_view);

struct KernelSpec {
    // The kernel family by name, as spec text spells it; the library's family registry
    // lists them (fa-jit emit --help, or an error from parse_spec naming the choices).
    std::string family;
    int head_dim = 128;              // of Q and K
    int head_dim_v = 0;              // of V and O where it differs from head_dim (MLA's 192/128), else 0
    DType dtype = DType::f16;        // of Q, K and V (and O unless out_dtype says otherwise)
    std::optional<DType> out_dtype;  // of O where it differs from dtype: e4m3 inputs only
    int block_q = 4;                 // query rows per thread block
    int block_k = 64;                // keys per block step; the rescale decision is made once per step
    int waves = 4;                   // waves (warps) per thread block
    float rescale_margin = 0.0f;
    CausalMode causal = CausalMode::none;
    KvLayout kv_layout = KvLayout::dense;
    int page_size = 0;  // keys per page with kv_layout paged (a power of two, 1..256), else 0
    // Model features. Each is specialized, so a kernel without one pays nothing for it;
    // their values are call arguments (AttentionArgs: window, softcap, sinks).
    bool window = false;   // a sliding window
    bool softcap = false;  // a logit soft-cap
    bool sinks = false;    // attention sinks
    std::string arch;      // full target name with features, e.g. gfx942:sramecc+:xnack- or sm_90a

    bool operator==(const KernelSpec&) const = default;
};

// The head dims specs and calls allow: 16..256 in steps of 8.
inline constexpr bool supported_head_dim(int head_dim) {
    return head_dim >= 16 && head_dim <= 256 && head_dim % 8 == 0;
}

// The head dim of V and O.
inline int value_head_dim(const KernelSpec& spec) { return spec.head_dim_v ? spec.head_dim_v : spec.head_dim; }

// The dtype of O.
inline DType output_dtype(const KernelSpec& spec) { return spec.out_dtype.value_or(spec.dtype); }

// Bytes of one element.
inline constexpr int element_bytes(DType dtype) { return dtype == DType::f32 ? 4 : dtype == DType::e4m3 ? 1 : 2; }

// The canonical text form, e.g.
//   family=scalar,d=128,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=bottom-right,arch=gfx1151
//   family=scalar,d=128,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=none,kv=paged,page=16,arch=sm_90a
//   family=mma-sm80,d=256,dtype=bf16,bq=128,bk=64,waves=8,margin=10,causal=bottom-right,window=1,softcap=1,arch=sm_90a
//   family=wgmma-sm90,d=192,dv=128,dtype=bf16,bq=128,bk=64,waves=8,margin=10,causal=bottom-right,arch=sm_90a
//   family=scalar,d=128,dtype=e4m3,out=bf16,bq=4,bk=64,waves=4,margin=10,causal=none,arch=sm_90a
// dv appears only where it differs from d, out only with e4m3, kv (and page) only for the batched layouts and
// window, softcap and sinks only when on, so plain dense specs read as they always did. arch comes last so the
// variable-length target name ends the line.
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
