#pragma once
// An IsaReport (AMD) or PtxasReport (NVIDIA) as JSON, for `fa-jit compile --isa --json`.
#include <nlohmann/json.hpp>

#include "codegen/isa_report.hpp"
#include "codegen/ptxas_report.hpp"

namespace fajit::cli {

nlohmann::json to_json(const IsaReport& report);
nlohmann::json to_json(const PtxasReport& report);

}  // namespace fajit::cli
