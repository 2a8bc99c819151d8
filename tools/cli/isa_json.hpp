#pragma once
// An IsaReport as JSON, for `fa-jit compile --isa --json`.
#include <nlohmann/json.hpp>

#include "codegen/isa_report.hpp"

namespace fajit::cli {

nlohmann::json to_json(const IsaReport& report);

}  // namespace fajit::cli
