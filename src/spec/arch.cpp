#include "spec/arch.hpp"

#include <charconv>

namespace fajit {

Vendor vendor_of(std::string_view arch) {
    if (arch.starts_with("gfx") && arch.size() > 3) return Vendor::amd;
    if (arch.starts_with("sm_") && arch.size() > 3) return Vendor::nvidia;
    return Vendor::unknown;
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
