#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/emitter.hpp"
#include "families/registry.hpp"
#include "runtime/kernel_key.hpp"

using namespace fajit;

namespace {
KernelSpec sample_spec() {
    return *parse_spec("family=scalar,d=96,dtype=bf16,margin=10,causal=bottom-right,arch=gfx1151").spec;
}

constexpr std::string_view every_prelude_part[] = {"prelude_common.h",  "prelude_wmma_tile.h", "prelude_mfma_tile.h",
                                                   "prelude_nvidia.h",  "prelude_sm80.h",      "prelude_sm90.h",
                                                   "prelude_split_kv.h"};

// A directory holding a copy of every embedded template, to edit one of them.
std::filesystem::path copy_of_templates(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const TemplateStore embedded;
    for (const std::string_view part : every_prelude_part) std::ofstream(dir / part) << embedded.text(part);
    for (const VariantRow& row : variant_table())
        std::ofstream(dir / row.family->template_file) << embedded.text(row.family->template_file);
    return dir;
}

cache::Key key_of(const KernelSpec& spec, const TemplateStore& templates) {
    const auto emitted = emit(spec, templates);
    return kernel_key({to_string(spec), spec.arch, "compiler", {}, emitted.template_bytes, emitted.source});
}

// A covering sample of valid specs of every family on the archs it compiles for.
std::vector<KernelSpec> sample_of_every_family() {
    std::vector<KernelSpec> specs;
    for (const VariantRow& row : variant_table())
        for (const char* arch : {"gfx1151", "gfx942:sramecc+:xnack-", "sm_80", "sm_90a"})
            for (const int head_dim : row.family->head_dims)
                for (const DType dtype : row.family->dtypes) {
                    KernelSpec spec;
                    spec.family = std::string(row.family->name);
                    spec.arch = arch;
                    spec.head_dim = head_dim;
                    spec.dtype = dtype;
                    spec = with_family_defaults(spec);
                    if (validate(spec).empty()) specs.push_back(spec);
                }
    return specs;
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
    CHECK(first.source.find("static constexpr int shared_bytes = " +
                            std::to_string(shared_layout(sample_spec()).shared_bytes) + ";") != std::string::npos);
    CHECK(first.source.find("#include") == std::string::npos);  // no toolkit header, ever
}

TEST_CASE("the emitted spec carries the layout constants the host reserved shared memory for") {
    const auto spec = *parse_spec("family=wgmma-sm90,d=256,dtype=f16,arch=sm_90a").spec;
    const SharedLayout layout = shared_layout(spec);
    REQUIRE(layout.constants[0].name == "kv_stages");
    const std::string source = emit(spec, TemplateStore()).source;
    CHECK(source.find("static constexpr int kv_stages = " + std::to_string(layout.constants[0].value) + ";") !=
          std::string::npos);
    CHECK(source.find("static constexpr int shared_bytes = " + std::to_string(layout.shared_bytes) + ";") !=
          std::string::npos);
}

TEST_CASE("specs that differ emit different sources") {
    const TemplateStore templates;
    KernelSpec other = sample_spec();
    other.rescale_margin = 0.25f;
    CHECK(emit(other, templates).source != emit(sample_spec(), templates).source);
    CHECK(emit(other, templates).source.find("rescale_margin = 0.25f;") != std::string::npos);
}

TEST_CASE("a kernel's source holds exactly the prelude parts its family names") {
    const TemplateStore templates;
    const auto specs = sample_of_every_family();
    REQUIRE(specs.size() > 20);
    for (const KernelSpec& spec : specs) {
        const std::string source = emit(spec, templates).source;
        const auto& parts = family_of(spec).prelude_parts;
        for (const std::string_view part : every_prelude_part) {
            const bool named = std::find(parts.begin(), parts.end(), part) != parts.end();
            CHECK_MESSAGE((source.find("// ---- " + std::string(part) + " ----") != std::string::npos) == named,
                          to_string(spec), " and ", part);
        }
    }
}

TEST_CASE("editing a prelude part re-keys only the kernels that use it") {
    const auto specs = sample_of_every_family();
    const TemplateStore embedded;
    const auto dir = copy_of_templates("fa-jit-prelude-part-test");
    std::ofstream(dir / "prelude_sm90.h", std::ios::app) << "// an edit to a wgmma wrapper\n";
    const TemplateStore edited(dir);
    int unchanged = 0, changed = 0;
    for (const KernelSpec& spec : specs) {
        const auto& parts = family_of(spec).prelude_parts;
        const bool uses_part = std::find(parts.begin(), parts.end(), "prelude_sm90.h") != parts.end();
        const bool same = key_of(spec, embedded) == key_of(spec, edited);
        CHECK_MESSAGE(same != uses_part, to_string(spec));
        (same ? unchanged : changed) += 1;
        if (spec.family == "scalar" || spec.family == "wmma-gfx11" || spec.family == "mfma-gfx9")
            CHECK_MESSAGE(same, to_string(spec));
    }
    CHECK(unchanged > 0);
    CHECK(changed > 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a template directory overrides the embedded templates") {
    const auto dir = std::filesystem::temp_directory_path() / "fa-jit-template-override-test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "prelude_common.h") << "// overridden prelude\n";
    std::ofstream(dir / "fa_scalar.h") << "// overridden scalar\n";
    const auto emitted = emit(sample_spec(), TemplateStore(dir));
    CHECK(emitted.source.find("// overridden prelude") != std::string::npos);
    CHECK(emitted.template_bytes == "// overridden prelude\n// overridden scalar\n");
    std::filesystem::remove(dir / "fa_scalar.h");
    CHECK_THROWS_WITH_AS(emit(sample_spec(), TemplateStore(dir)), doctest::Contains("fa_scalar.h"), std::runtime_error);
    std::filesystem::remove_all(dir);
}
