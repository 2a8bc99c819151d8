#include "spec_argument.hpp"

#include "exit_codes.hpp"

namespace fajit::cli {

KernelSpec parse_spec_argument(const std::string& text, const std::string& arch) {
    std::string retargeted = text;
    if (!arch.empty()) {
        retargeted.clear();
        std::size_t begin = 0;
        while (begin <= text.size()) {
            const std::size_t end = std::min(text.find(',', begin), text.size());
            const std::string field = text.substr(begin, end - begin);
            if (!field.starts_with("arch=")) retargeted += field + ",";
            begin = end + 1;
        }
        retargeted += "arch=" + arch;
    }
    auto parsed = parse_spec(retargeted);
    if (!parsed.spec) throw UsageError("bad spec: " + parsed.error);
    return *parsed.spec;
}

}  // namespace fajit::cli
