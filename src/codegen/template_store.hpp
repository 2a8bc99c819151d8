#pragma once
// Kernel template text. The library carries the templates embedded at build time so
// an installed library needs no source tree; a development override reads them from
// a directory instead (FAJIT_TEMPLATE_DIR), so a template edit needs no rebuild.
#include <filesystem>
#include <string>
#include <string_view>

namespace fajit {

class TemplateStore {
public:
    // Empty override_dir: the embedded copies.
    explicit TemplateStore(std::filesystem::path override_dir = {});
    // Throws std::runtime_error naming the template and directory when it is missing.
    std::string text(std::string_view name) const;

private:
    std::filesystem::path override_dir_;
};

}  // namespace fajit
