#pragma once
// What the compile suites share: the backend for a target, and compiling a spec
// straight through it (the suites check compilers, so the cache stays out of the way).
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "fajit/kernel_spec.hpp"

namespace fajit::testing {

// The backend compiling for arch, or nullptr after printing why the caller must skip.
const Backend* compiler_for(const std::string& arch);

CompileResult compile_directly(const KernelSpec&, const Backend&, std::vector<std::string> options = {});

}  // namespace fajit::testing
