#include "runtime/kernel_key.hpp"

namespace fajit {
namespace {

// Bumped whenever the library changes how it calls kernels (fa_params, launch shape),
// so entries built for an older library are never loaded by a newer one.
constexpr std::string_view abi_version = "fajit-abi-1";

}  // namespace

cache::Key kernel_key(const KernelKeyInputs& inputs) {
    std::string options;
    for (const auto& option : inputs.options) options += option + '\n';
    return cache::KeyBuilder()
        .add("abi", abi_version)
        .add("spec", inputs.spec)
        .add("arch", inputs.arch)
        .add("compiler", inputs.compiler_identity)
        .add("options", options)
        .add("templates", inputs.template_bytes)
        .add("source", inputs.source)
        .finish();
}

}  // namespace fajit
