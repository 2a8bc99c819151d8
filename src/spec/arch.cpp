#include "spec/arch.hpp"

#include <algorithm>
#include <charconv>
#include <ranges>
#include <span>

namespace fajit {
namespace {

// The target features a target ID may set, in canonical (alphabetical) order.
constexpr std::string_view xnack[] = {"xnack"};
constexpr std::string_view sramecc_and_xnack[] = {"sramecc", "xnack"};

struct AmdProcessor {
    std::string_view name;
    std::span<const std::string_view> features;
};

// LLVM's AMDGPU processors from gfx9 on, each with the target features it takes (LLVM's
// AMDGPUUsage), all of which the compiler library of ROCm 5.7 knows. That library aborts
// the whole process on a processor or feature it does not know instead of failing the
// compile, so no other name may reach it. gfx6 to gfx8 are left out: they run wave64,
// which wave_size() gives gfx9 alone.
constexpr AmdProcessor amd_processors[] = {
    {"gfx900", xnack},
    {"gfx902", xnack},
    {"gfx904", xnack},
    {"gfx906", sramecc_and_xnack},
    {"gfx908", sramecc_and_xnack},
    {"gfx909", xnack},
    {"gfx90a", sramecc_and_xnack},
    {"gfx90c", xnack},
    {"gfx940", sramecc_and_xnack},
    {"gfx941", sramecc_and_xnack},
    {"gfx942", sramecc_and_xnack},
    {"gfx1010", xnack},
    {"gfx1011", xnack},
    {"gfx1012", xnack},
    {"gfx1013", xnack},
    {"gfx1030", {}},
    {"gfx1031", {}},
    {"gfx1032", {}},
    {"gfx1033", {}},
    {"gfx1034", {}},
    {"gfx1035", {}},
    {"gfx1036", {}},
    {"gfx1100", {}},
    {"gfx1101", {}},
    {"gfx1102", {}},
    {"gfx1103", {}},
    {"gfx1150", {}},
    {"gfx1151", {}},
};

// CUDA 12's NVRTC, the oldest the CUDA backend loads, compiles from sm_50; the
// architecture-specific ("a") targets begin with sm_90a.
constexpr int oldest_sm = 50;
constexpr int first_architecture_specific_sm = 90;

// names, comma-separated.
std::string joined(std::ranges::input_range auto&& names) {
    std::string text;
    for (const std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
    return text;
}

std::string features_rule(const AmdProcessor& processor) {
    const std::string name(processor.name);
    if (processor.features.empty()) return name + " takes no target features: name it alone";
    return name + " takes the target features " + joined(processor.features) +
           ", each at most once, in that order, with + or - (e.g. " + name + ":" +
           std::string(processor.features.front()) + "+)";
}

std::string amd_target_error(std::string_view arch) {
    const std::string_view name = processor_of(arch);
    const auto* processor = std::ranges::find(amd_processors, name, &AmdProcessor::name);
    if (processor == std::end(amd_processors))
        return "not an AMD processor fa-jit compiles for; expected one of " +
               joined(amd_processors | std::views::transform(&AmdProcessor::name)) +
               ", with the target features it takes (e.g. gfx942:sramecc+:xnack-)";
    // Features in canonical order only: one target must never be two cache directories.
    std::size_t next_feature = 0;
    for (std::string_view rest = arch.substr(name.size()); !rest.empty();) {
        rest.remove_prefix(1);  // the ':' before each setting
        const std::string_view setting = rest.substr(0, rest.find(':'));
        rest.remove_prefix(setting.size());
        if (!setting.ends_with('+') && !setting.ends_with('-')) return features_rule(*processor);
        const auto given = processor->features.subspan(next_feature);
        const auto feature = std::ranges::find(given, setting.substr(0, setting.size() - 1));
        if (feature == given.end()) return features_rule(*processor);
        next_feature += static_cast<std::size_t>(feature - given.begin()) + 1;
    }
    return {};
}

std::string nvidia_target_error(std::string_view arch) {
    std::string_view digits = arch.substr(3);
    const bool architecture_specific = digits.ends_with('a');
    if (architecture_specific) digits.remove_suffix(1);
    int sm = 0;
    const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), sm);
    const bool plain_number =
        status == std::errc{} && end == digits.data() + digits.size() && digits.front() != '0' && digits.size() <= 3;
    if (plain_number && sm >= oldest_sm && (!architecture_specific || sm >= first_architecture_specific_sm)) return {};
    return "expected sm_ and a compute capability from " + std::to_string(oldest_sm) +
           " (sm_80, sm_120), with the suffix a for an architecture-specific target from sm_" +
           std::to_string(first_architecture_specific_sm) + " on (sm_90a)";
}

}  // namespace

Vendor vendor_of(std::string_view arch) {
    if (arch.starts_with("gfx") && arch.size() > 3) return Vendor::amd;
    if (arch.starts_with("sm_") && arch.size() > 3) return Vendor::nvidia;
    return Vendor::unknown;
}

std::string target_name_error(std::string_view arch) {
    switch (vendor_of(arch)) {
        case Vendor::amd:
            return amd_target_error(arch);
        case Vendor::nvidia:
            return nvidia_target_error(arch);
        case Vendor::unknown:
            break;
    }
    return "must name an AMD (gfx...) or NVIDIA (sm_...) target";
}

std::string_view processor_of(std::string_view arch) { return arch.substr(0, arch.find(':')); }

int wave_size(std::string_view arch) {
    const auto processor = processor_of(arch);
    // gfx9xx is four characters after "gfx"; gfx10xx and up are wave32 by default.
    if (vendor_of(arch) == Vendor::amd && processor.size() == 6 && processor[3] == '9') return 64;
    return 32;
}

bool is_gfx11(std::string_view arch) {
    const auto processor = processor_of(arch);
    return processor.starts_with("gfx11") && processor.size() == 7;
}

bool is_cdna_mfma(std::string_view arch) {
    const auto processor = processor_of(arch);
    return processor == "gfx90a" || processor == "gfx940" || processor == "gfx941" || processor == "gfx942";
}

int sm_version(std::string_view arch) {
    int sm = 0;
    if (vendor_of(arch) == Vendor::nvidia) std::from_chars(arch.data() + 3, arch.data() + arch.size(), sm);
    return sm;
}

}  // namespace fajit
