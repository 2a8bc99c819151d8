#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "codegen/emitter.hpp"

using namespace fajit;

namespace {
KernelSpec sample_spec() {
    return *parse_spec("family=scalar,d=96,dtype=bf16,margin=10,causal=bottom-right,arch=gfx1151").spec;
}
}  // namespace

TEST_CASE("emitted source is deterministic and carries the specialization") {
    const TemplateStore templates;
    const auto first = emit(sample_spec(), templates);
    const auto second = emit(sample_spec(), templates);
    CHECK(first.source == second.source);
    CHECK(first.name_expression == "fa_scalar<fajit_spec>");
    CHECK(first.source.find("// spec: " + to_string(sample_spec())) != std::string::npos);
    CHECK(first.source.find("using element = fa_bf16;") != std::string::npos);
    CHECK(first.source.find("static constexpr int head_dim = 96;") != std::string::npos);
    CHECK(first.source.find("static constexpr float rescale_margin = 10.0f;") != std::string::npos);
    CHECK(first.source.find("static constexpr int causal = FA_CAUSAL_BOTTOM_RIGHT;") != std::string::npos);
    CHECK(first.source.find("#include") == std::string::npos);  // no toolkit header, ever
}

TEST_CASE("specs that differ emit different sources") {
    const TemplateStore templates;
    KernelSpec other = sample_spec();
    other.rescale_margin = 0.25f;
    CHECK(emit(other, templates).source != emit(sample_spec(), templates).source);
    CHECK(emit(other, templates).source.find("rescale_margin = 0.25f;") != std::string::npos);
}

TEST_CASE("a template directory overrides the embedded templates") {
    const auto dir = std::filesystem::temp_directory_path() / "fa-jit-template-override-test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "prelude.h") << "// overridden prelude\n";
    std::ofstream(dir / "fa_scalar.h") << "// overridden scalar\n";
    const auto emitted = emit(sample_spec(), TemplateStore(dir));
    CHECK(emitted.source.find("// overridden prelude") != std::string::npos);
    CHECK(emitted.template_bytes == "// overridden prelude\n// overridden scalar\n");
    std::filesystem::remove(dir / "fa_scalar.h");
    CHECK_THROWS_WITH_AS(emit(sample_spec(), TemplateStore(dir)), doctest::Contains("fa_scalar.h"), std::runtime_error);
    std::filesystem::remove_all(dir);
}
