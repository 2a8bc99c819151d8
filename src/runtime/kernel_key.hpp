#pragma once
// The cache key of a compiled kernel: everything that decides the bytes a compiler
// produces, and nothing else, so a key never serves a wrong kernel and a rebuild
// never misses for no reason.
#include <string>
#include <vector>

#include "cache/key.hpp"

namespace fajit {

struct KernelKeyInputs {
    std::string spec;                  // canonical spec text
    std::string arch;                  // full target name with features
    std::string compiler_identity;     // compiler version and library fingerprints
    std::vector<std::string> options;  // extra compiler options
    std::string template_bytes;        // every template the source came from
    std::string source;                // the emitted source
};

// FAJIT_TEMPLATE_DIR and FAJIT_DEBUG_COUNTERS, the environment variables that change
// generated code, reach the key through the templates and options they change.
cache::Key kernel_key(const KernelKeyInputs&);

}  // namespace fajit
