#include <doctest/doctest.h>

#include <functional>

#include "runtime/kernel_key.hpp"

using namespace fajit;

TEST_CASE("every input of the kernel key changes it, and the same inputs give the same key") {
    const KernelKeyInputs base{
        "family=scalar,d=64", "gfx90a:sramecc+:xnack-", "hiprtc 9.0 abc comgr def", {"-DX=1"}, "templates", "source"};
    CHECK(kernel_key(base) == kernel_key(base));
    const std::pair<const char*, std::function<void(KernelKeyInputs&)>> changes[] = {
        {"spec", [](KernelKeyInputs& k) { k.spec += ",margin=1"; }},
        {"arch features", [](KernelKeyInputs& k) { k.arch = "gfx90a"; }},
        {"compiler", [](KernelKeyInputs& k) { k.compiler_identity = "hiprtc 9.0 abc comgr 123"; }},
        {"options", [](KernelKeyInputs& k) { k.options.clear(); }},
        {"templates", [](KernelKeyInputs& k) { k.template_bytes += " "; }},
        {"source", [](KernelKeyInputs& k) { k.source += " "; }},
        {"field boundary",
         [](KernelKeyInputs& k) {
             k.template_bytes += "s";
             k.source = "ource";
         }},
    };
    for (const auto& [what, change] : changes) {
        KernelKeyInputs changed = base;
        change(changed);
        CHECK_MESSAGE(kernel_key(changed) != kernel_key(base), what);
    }
}
