#pragma once
// Turns a KernelSpec into the exact source the compilers see: the prelude, the
// family's template and a specialization struct, deterministic byte for byte.
#include <string>

#include "codegen/template_store.hpp"
#include "fajit/kernel_spec.hpp"

namespace fajit {

struct EmittedKernel {
    std::string source;
    std::string name_expression;  // the kernel instantiation to ask the compiler for
    std::string template_bytes;   // every template the source was built from, for the cache key
};

EmittedKernel emit(const KernelSpec&, const TemplateStore&);

}  // namespace fajit
