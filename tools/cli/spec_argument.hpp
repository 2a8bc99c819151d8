#pragma once
// The SPEC argument of emit and compile, with --arch retargeting it.
#include <string>

#include "fajit/kernel_spec.hpp"

namespace fajit::cli {

// Parses and validates text; a non-empty arch replaces the spec's own (which may then be
// left out), and tile defaults follow the new arch. Throws UsageError naming the bad field.
KernelSpec parse_spec_argument(const std::string& text, const std::string& arch);

// The SPEC argument's help: an example, then the fields it must and may name.
std::string spec_argument_help();

}  // namespace fajit::cli
