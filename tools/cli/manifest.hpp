#pragma once
// Reads a warm manifest: a JSON file listing the variants a deployment needs
// (tools/cli/MANIFEST.md is its specification).
#include <filesystem>
#include <string>
#include <vector>

#include "fajit/kernel_spec.hpp"

namespace fajit::cli {

// Every variant the manifest names. Entries that give no arch get each of default_archs.
// Throws UsageError naming the file, the entry (variants[i]) and the problem.
std::vector<KernelSpec> read_manifest(const std::filesystem::path& path, const std::vector<std::string>& default_archs);

}  // namespace fajit::cli
