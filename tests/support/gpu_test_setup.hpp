#pragma once
// What every GPU suite shares: a runtime with its own cache directory, the device's
// arch, the reason to skip, and the scalar reference spec for a case.
#include <string>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/attention_case.hpp"

namespace fajit::testing {

// Options for GPU suites: the environment's, with a scratch cache directory of the process.
Options gpu_test_options(bool debug_counters);
// One runtime per test process, without test counters.
Runtime& gpu_test_runtime();
std::string gpu_test_arch();
// True, after printing why, when a GPU suite must skip here (no driver, or the library
// sees no device).
bool skip_without_device();

// The prefill families of the variant table (those that refuse no shape), or the decode
// families (those that take only decode shapes), that compile for arch, in table order;
// prints each one that does not, so a suite's log says what it skipped.
enum class FamilyKind { prefill, decode };
std::vector<std::string> families_on(const std::string& arch, FamilyKind kind);

// The scalar kernel for a case: the reference every fast family is compared with.
KernelSpec scalar_spec(const CaseShape&, float margin);

// Compiles specs on all cores first, so a sweep finds each one in the cache (NVRTC is
// the slow part of a first run). Prints each compile failure; returns how many failed.
int prepare_all(Runtime&, const std::vector<KernelSpec>&);

}  // namespace fajit::testing
