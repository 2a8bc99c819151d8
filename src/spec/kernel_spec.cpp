#include "fajit/kernel_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include "runtime/launch_geometry.hpp"
#include "spec/arch.hpp"

namespace fajit {
namespace {

template <class Enum, std::size_t N>
std::optional<Enum> lookup(const std::pair<Enum, std::string_view> (&table)[N], std::string_view text) {
    for (const auto& [value, name] : table)
        if (name == text) return value;
    return std::nullopt;
}

template <class Enum, std::size_t N>
std::string_view name_of(const std::pair<Enum, std::string_view> (&table)[N], Enum value) {
    for (const auto& [candidate, name] : table)
        if (candidate == value) return name;
    return "?";
}

constexpr std::pair<Family, std::string_view> family_names[] = {
    {Family::scalar, "scalar"},
    {Family::wmma_gfx11, "wmma-gfx11"},
    {Family::mma_sm80, "mma-sm80"},
    {Family::wgmma_sm90, "wgmma-sm90"}};
constexpr std::pair<DType, std::string_view> dtype_names[] = {
    {DType::f16, "f16"}, {DType::bf16, "bf16"}, {DType::f32, "f32"}};
constexpr std::pair<CausalMode, std::string_view> causal_names[] = {
    {CausalMode::none, "none"}, {CausalMode::top_left, "top-left"}, {CausalMode::bottom_right, "bottom-right"}};

// f32 holds exp(88); the running sum adds up to 2^24 keys (e^16.6) on top of exp(margin).
constexpr float max_margin_f32_accumulation = 64.0f;

std::string format_float(float value) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, end);
}

std::string field_error(std::string_view field, const std::string& value, std::string_view rule) {
    return std::string(field) + "=" + value + ": " + std::string(rule);
}

std::string validate_scalar(const KernelSpec& spec) {
    if (spec.head_dim < 16 || spec.head_dim > 256 || spec.head_dim % 8 != 0)
        return field_error("d", std::to_string(spec.head_dim),
                           "family scalar supports head dims 16..256 in steps of 8");
    if (spec.waves != 1 && spec.waves != 2 && spec.waves != 4 && spec.waves != 8)
        return field_error("waves", std::to_string(spec.waves), "must be 1, 2, 4 or 8");
    if (spec.block_q < spec.waves || spec.block_q % spec.waves != 0 || spec.block_q > 64)
        return field_error("bq", std::to_string(spec.block_q),
                           "family scalar needs a multiple of waves (" + std::to_string(spec.waves) + "), at most 64");
    const int lanes = wave_size(spec.arch);
    if (spec.block_k < lanes || spec.block_k % lanes != 0 || spec.block_k > 256)
        return field_error("bk", std::to_string(spec.block_k),
                           "family scalar needs a multiple of the wave size (" + std::to_string(lanes) + " on " +
                               spec.arch + "), at most 256");
    return {};
}

// The tensor-core families round P to the input type for the P.V product, and
// unnormalized P reaches exp(margin): f16 overflows past exp(11.09).
std::string rounded_probability_margin_error(const KernelSpec& spec) {
    if (spec.dtype == DType::f16 && spec.rescale_margin > 11.0f)
        return field_error("margin", format_float(spec.rescale_margin),
                           "with dtype f16 the margin must be at most 11 so exp(margin) fits in f16");
    return {};
}

std::string validate_wmma_gfx11(const KernelSpec& spec) {
    const int d = spec.head_dim;
    if (d != 64 && d != 80 && d != 96 && d != 128 && d != 256)
        return field_error("d", std::to_string(d), "family wmma-gfx11 supports head dims 64, 80, 96, 128, 256");
    if (spec.dtype == DType::f32) return field_error("dtype", "f32", "family wmma-gfx11 supports f16 and bf16");
    if (spec.waves != 1 && spec.waves != 2 && spec.waves != 4 && spec.waves != 8)
        return field_error("waves", std::to_string(spec.waves), "must be 1, 2, 4 or 8");
    if (spec.block_q != 16 * spec.waves)
        return field_error("bq", std::to_string(spec.block_q),
                           "family wmma-gfx11 needs 16 query rows per wave (" + std::to_string(16 * spec.waves) + ")");
    if (spec.block_k < 16 || spec.block_k % 16 != 0 || spec.block_k > 128)
        return field_error("bk", std::to_string(spec.block_k), "family wmma-gfx11 needs a multiple of 16, at most 128");
    if (!is_gfx11(spec.arch) && vendor_of(spec.arch) != Vendor::nvidia)
        return field_error("arch", spec.arch,
                           "family wmma-gfx11 runs natively on gfx11 and through its emulation on NVIDIA (sm_*)");
    if (auto error = rounded_probability_margin_error(spec); !error.empty()) return error;
    if (const unsigned bytes = family_shared_bytes(spec); bytes > 64u * 1024u)
        return field_error("bk", std::to_string(spec.block_k),
                           "family wmma-gfx11 needs " + std::to_string(bytes) + " bytes of LDS at d=" +
                               std::to_string(d) + " (at most 65536): choose a smaller bk or fewer waves");
    return {};
}

// Opt-in shared memory per block by SM (CUDA programming guide, compute capabilities):
// the data-center parts (8.0, 8.7, 9.0, 10.x) have far more than the consumer ones.
unsigned nvidia_shared_limit(int sm) {
    if (sm == 80 || sm == 87) return 163u * 1024u;
    if (sm >= 90 && sm < 120) return 227u * 1024u;
    return 99u * 1024u;
}

std::string validate_mma_sm80(const KernelSpec& spec) {
    const int d = spec.head_dim;
    const int sm = sm_version(spec.arch);
    if (sm < 80) return field_error("arch", spec.arch, "family mma-sm80 needs an NVIDIA target sm_80 or later");
    if (d != 64 && d != 80 && d != 96 && d != 128 && d != 256)
        return field_error("d", std::to_string(d), "family mma-sm80 supports head dims 64, 80, 96, 128, 256");
    if (spec.dtype == DType::f32) return field_error("dtype", "f32", "family mma-sm80 supports f16 and bf16");
    if (spec.waves != 1 && spec.waves != 2 && spec.waves != 4 && spec.waves != 8)
        return field_error("waves", std::to_string(spec.waves), "must be 1, 2, 4 or 8");
    if (spec.block_q != 16 * spec.waves && spec.block_q != 32 * spec.waves)
        return field_error("bq", std::to_string(spec.block_q),
                           "family mma-sm80 needs 16 or 32 query rows per warp (" + std::to_string(16 * spec.waves) +
                               " or " + std::to_string(32 * spec.waves) + ")");
    if (spec.block_k < 16 || spec.block_k % 16 != 0 || spec.block_k > 128)
        return field_error("bk", std::to_string(spec.block_k), "family mma-sm80 needs a multiple of 16, at most 128");
    // Each lane holds rows/warp * (d + bk) / 32 f32 accumulators (O and S). At 192
    // (32 rows, d=128, bk=64) ptxas already spills; 160 compiles clean at every head dim
    // (tools/tiles/mma_sm80.md lists the register counts).
    const int accumulators = spec.block_q / spec.waves * (d + spec.block_k) / 32;
    if (accumulators > 160)
        return field_error("bk", std::to_string(spec.block_k),
                           "family mma-sm80 would hold " + std::to_string(accumulators) +
                               " accumulators per lane (at most 160): use fewer rows per warp or a smaller bk");
    if (auto error = rounded_probability_margin_error(spec); !error.empty()) return error;
    if (const unsigned bytes = family_shared_bytes(spec), limit = nvidia_shared_limit(sm); bytes > limit)
        return field_error("bk", std::to_string(spec.block_k),
                           "family mma-sm80 needs " + std::to_string(bytes) +
                               " bytes of shared memory at d=" + std::to_string(d) + " (" + spec.arch + " allows " +
                               std::to_string(limit) + "): choose a smaller bq or bk");
    return {};
}

std::string validate_wgmma_sm90(const KernelSpec& spec) {
    const int d = spec.head_dim;
    // wgmma is one of the architecture-specific features only sm_90a code may use.
    if (spec.arch != "sm_90a") return field_error("arch", spec.arch, "family wgmma-sm90 needs the NVIDIA target sm_90a");
    if (d != 64 && d != 128 && d != 256)
        return field_error("d", std::to_string(d), "family wgmma-sm90 supports head dims 64, 128, 256");
    if (spec.dtype == DType::f32) return field_error("dtype", "f32", "family wgmma-sm90 supports f16 and bf16");
    // A fourth consumer warpgroup would leave each 104 registers, too few to overlap
    // a step's P V with the next softmax at any head dim (ptxas serializes the wgmma).
    if (spec.waves != 4 && spec.waves != 8 && spec.waves != 12)
        return field_error("waves", std::to_string(spec.waves),
                           "family wgmma-sm90 needs 4, 8 or 12 (1 to 3 warpgroups)");
    if (spec.block_q != 16 * spec.waves)
        return field_error(
            "bq", std::to_string(spec.block_q),
            "family wgmma-sm90 needs 64 query rows per warpgroup (" + std::to_string(16 * spec.waves) + ")");
    if (spec.block_k != 64 && spec.block_k != 128)
        return field_error("bk", std::to_string(spec.block_k), "family wgmma-sm90 needs 64 or 128");
    // While a step's P V runs, a consumer lane holds O (d/2 f32), the next step's S
    // (bk/2 f32) and P (bk/4 packed pairs): d/2 + 3bk/4 registers. The limits are the
    // largest such counts ptxas fits in what the consumers get (fa_wgmma_layout: 240,
    // 224 and 152 registers for 1 to 3 warpgroups) without spills or serialized wgmma;
    // tests/mma checks every candidate.
    const int groups = spec.waves / 4;
    const int register_limit = groups <= 2 ? 176 : 112;
    if (const int registers = d / 2 + 3 * spec.block_k / 4; registers > register_limit)
        return field_error("bk", std::to_string(spec.block_k),
                           "family wgmma-sm90 would hold " + std::to_string(registers) +
                               " accumulator registers per lane (at most " + std::to_string(register_limit) + " with " +
                               std::to_string(groups) + " warpgroups): use a smaller bk or fewer warpgroups");
    if (auto error = rounded_probability_margin_error(spec); !error.empty()) return error;
    if (const unsigned bytes = family_shared_bytes(spec), limit = nvidia_shared_limit(90); bytes > limit)
        return field_error("bk", std::to_string(spec.block_k),
                           "family wgmma-sm90 needs " + std::to_string(bytes) + " bytes of shared memory at d=" +
                               std::to_string(d) + " (sm_90a allows " + std::to_string(limit) +
                               "): choose a smaller bk or fewer waves");
    return {};
}

}  // namespace

std::string_view to_string(Family value) { return name_of(family_names, value); }
std::string_view to_string(DType value) { return name_of(dtype_names, value); }
std::string_view to_string(CausalMode value) { return name_of(causal_names, value); }
std::optional<Family> parse_family(std::string_view text) { return lookup(family_names, text); }
std::optional<DType> parse_dtype(std::string_view text) { return lookup(dtype_names, text); }
std::optional<CausalMode> parse_causal(std::string_view text) { return lookup(causal_names, text); }

std::string to_string(const KernelSpec& spec) {
    std::string text;
    text += "family=" + std::string(to_string(spec.family));
    text += ",d=" + std::to_string(spec.head_dim);
    text += ",dtype=" + std::string(to_string(spec.dtype));
    text += ",bq=" + std::to_string(spec.block_q);
    text += ",bk=" + std::to_string(spec.block_k);
    text += ",waves=" + std::to_string(spec.waves);
    text += ",margin=" + format_float(spec.rescale_margin);
    text += ",causal=" + std::string(to_string(spec.causal));
    text += ",arch=" + spec.arch;
    return text;
}

std::string validate(const KernelSpec& spec) {
    if (vendor_of(spec.arch) == Vendor::unknown)
        return field_error("arch", spec.arch, "must name an AMD (gfx...) or NVIDIA (sm_...) target");
    if (!std::isfinite(spec.rescale_margin) || spec.rescale_margin < 0.0f ||
        spec.rescale_margin > max_margin_f32_accumulation)
        return field_error("margin", format_float(spec.rescale_margin), "must be finite and within 0..64");
    switch (spec.family) {
        case Family::scalar:
            return validate_scalar(spec);
        case Family::wmma_gfx11:
            return validate_wmma_gfx11(spec);
        case Family::mma_sm80:
            return validate_mma_sm80(spec);
        case Family::wgmma_sm90:
            return validate_wgmma_sm90(spec);
    }
    return "family: unknown value";
}

KernelSpec with_family_defaults(KernelSpec spec) {
    switch (spec.family) {
        case Family::scalar:
            spec.waves = 4;
            spec.block_q = 4;
            spec.block_k = wave_size(spec.arch) * 2;
            break;
        case Family::wmma_gfx11:
            // Head dim 256 stages Q in LDS too; 64-key steps of 4 waves would need 102 KiB.
            spec.waves = spec.head_dim > 128 ? 2 : 4;
            spec.block_q = 16 * spec.waves;
            spec.block_k = spec.head_dim > 128 ? 32 : 64;
            break;
        case Family::mma_sm80: {
            // The tile table; tools/tiles/mma_sm80.md records the candidates and timings.
            // Up to d=96, 4 warps of 32 rows with 64-key steps. From d=128 the registers
            // allow 32 rows only with 32-key steps, and on the H200 8 warps of 16 rows with
            // long key steps (fewer barriers and softmax passes per key) measured faster;
            // they need an sm_90-class part's 227 KiB of shared memory, so other targets
            // (sm_80 included) keep the narrow tiles.
            spec.waves = 4;
            spec.block_q = spec.head_dim > 128 ? 64 : 128;
            spec.block_k = spec.head_dim >= 128 ? 32 : 64;
            if (spec.head_dim >= 128) {
                KernelSpec wide = spec;
                wide.waves = 8;
                wide.block_q = 128;
                wide.block_k = spec.head_dim > 128 ? 64 : 128;
                if (family_shared_bytes(wide) <= nvidia_shared_limit(sm_version(spec.arch))) spec = wide;
            }
            break;
        }
        case Family::wgmma_sm90:
            // Two warpgroups of 64 rows taking turns on the tensor cores;
            // tools/tiles/wgmma_sm90.md records the candidates and timings. 128-key
            // steps; at d=256 the registers allow 64-key steps only.
            spec.waves = 8;
            spec.block_q = 16 * spec.waves;
            spec.block_k = spec.head_dim == 256 ? 64 : 128;
            break;
    }
    return spec;
}

SpecParseResult parse_spec(std::string_view text) {
    std::map<std::string, std::string, std::less<>> fields;
    while (!text.empty()) {
        const auto end = std::min(text.find(','), text.size());
        const auto item = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0)
            return {std::nullopt, "spec: expected name=value, got '" + std::string(item) + "'"};
        auto [it, inserted] = fields.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
        if (!inserted) return {std::nullopt, it->first + ": given twice"};
    }
    for (const char* required : {"family", "d", "dtype", "arch"})
        if (!fields.contains(required))
            return {std::nullopt, std::string(required) + ": missing (required fields: family, d, dtype, arch)"};

    KernelSpec spec;
    const auto family = parse_family(fields["family"]);
    if (!family)
        return {std::nullopt, field_error("family", fields["family"], "expected scalar, wmma-gfx11, mma-sm80 or wgmma-sm90")};
    spec.family = *family;
    spec.arch = fields["arch"];
    // Tile defaults may depend on the head dim, so it is read first.
    if (auto it = fields.find("d"); it != fields.end()) {
        auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), spec.head_dim);
        if (ec != std::errc{} || end != it->second.data() + it->second.size())
            return {std::nullopt, field_error("d", it->second, "expected an integer")};
    }
    spec = with_family_defaults(spec);

    const auto parse_int = [&](std::string_view name, int& out) -> std::string {
        const auto it = fields.find(name);
        if (it == fields.end()) return {};
        const auto& value = it->second;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
        if (ec != std::errc{} || end != value.data() + value.size())
            return field_error(name, value, "expected an integer");
        return {};
    };
    for (auto [name, target] : {std::pair<std::string_view, int*>{"d", &spec.head_dim},
                                {"bq", &spec.block_q},
                                {"bk", &spec.block_k},
                                {"waves", &spec.waves}})
        if (auto error = parse_int(name, *target); !error.empty()) return {std::nullopt, error};

    const auto dtype = parse_dtype(fields["dtype"]);
    if (!dtype) return {std::nullopt, field_error("dtype", fields["dtype"], "expected f16, bf16 or f32")};
    spec.dtype = *dtype;
    if (auto it = fields.find("causal"); it != fields.end()) {
        const auto causal = parse_causal(it->second);
        if (!causal)
            return {std::nullopt, field_error("causal", it->second, "expected none, top-left or bottom-right")};
        spec.causal = *causal;
    }
    if (auto it = fields.find("margin"); it != fields.end()) {
        const auto& value = it->second;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), spec.rescale_margin);
        if (ec != std::errc{} || end != value.data() + value.size())
            return {std::nullopt, field_error("margin", value, "expected a number")};
    }
    for (const auto& [name, value] : fields) {
        static constexpr std::string_view known[] = {"family", "d",      "dtype",  "bq",  "bk",
                                                     "waves",  "margin", "causal", "arch"};
        if (std::find(std::begin(known), std::end(known), name) == std::end(known))
            return {std::nullopt, field_error(name, value, "unknown field")};
    }
    if (auto error = validate(spec); !error.empty()) return {std::nullopt, error};
    return {spec, {}};
}

}  // namespace fajit
