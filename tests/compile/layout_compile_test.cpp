// The shared memory the host reserves covers what every kernel uses. Each family's
// template static_asserts that its layout fits in the emitted shared_bytes, so here
// every family compiles at the tiles that need the most shared memory on each kind of
// target, and compiling the same source with a few bytes less must fail on that assert.
// No GPU is needed; a backend whose compiler library is absent is skipped with its reason.
#include <doctest/doctest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "codegen/emitter.hpp"
#include "families/registry.hpp"
#include "support/compile_support.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

// The valid spec of the family on arch whose layout is largest, over every tile shape
// validation can accept, at the family's largest head dim.
std::optional<KernelSpec> largest_layout(const FamilyDescriptor& family, const std::string& arch) {
    std::optional<KernelSpec> largest;
    for (const int waves : {1, 2, 4, 8, 12})
        for (const int rows_per_wave : {1, 2, 4, 8, 16, 32})
            for (int block_k = 16; block_k <= 256; block_k += 16) {
                KernelSpec spec;
                spec.family = std::string(family.name);
                spec.arch = arch;
                spec.head_dim = family.head_dims.back();
                spec.dtype = family.dtypes.front();
                spec.rescale_margin = 10.0f;
                spec.causal = CausalMode::bottom_right;
                spec.waves = waves;
                spec.block_q = rows_per_wave * waves;
                spec.block_k = block_k;
                if (!validate(spec).empty()) continue;
                if (!largest || shared_layout(spec).shared_bytes > shared_layout(*largest).shared_bytes) largest = spec;
            }
    return largest;
}

CompileResult compile_source(const std::string& source, const EmittedKernel& emitted, const KernelSpec& spec,
                             const Backend& backend) {
    CompileRequest request;
    request.source = source;
    request.program_name = "fa_layout_check.cu";
    request.name_expressions = {emitted.name_expression};
    request.arch = spec.arch;
    return backend.compile(request);
}

}  // namespace

TEST_CASE("every family compiles at its largest layout, and one reserved byte too few fails to compile") {
    int checked = 0;
    for (const VariantRow& row : variant_table())
        for (const std::string arch : {"gfx1151", "sm_90a"}) {
            if (!row.family->compiles_for(arch)) continue;
            const Backend* backend = compiler_for(arch);
            if (!backend) continue;
            const auto spec = largest_layout(*row.family, arch);
            REQUIRE_MESSAGE(spec, row.family->name, " has no valid spec on ", arch);
            const unsigned bytes = shared_layout(*spec).shared_bytes;
            const auto emitted = emit(*spec, TemplateStore());
            const auto compiled = compile_source(emitted.source, emitted, *spec, *backend);
            CHECK_MESSAGE(compiled.ok, to_string(*spec), "\n", compiled.log);

            std::string short_source = emitted.source;
            const std::string reserved = "static constexpr int shared_bytes = " + std::to_string(bytes) + ";";
            const auto at = short_source.find(reserved);
            REQUIRE(at != std::string::npos);
            short_source.replace(at, reserved.size(),
                                 "static constexpr int shared_bytes = " + std::to_string(bytes - 1) + ";");
            const auto refused = compile_source(short_source, emitted, *spec, *backend);
            CHECK_MESSAGE(!refused.ok, to_string(*spec), " compiled with ", bytes - 1, " bytes reserved");
            CHECK_MESSAGE(refused.log.find("less") != std::string::npos, refused.log);
            std::printf("%s: %u bytes of shared memory; %u refused\n", to_string(*spec).c_str(), bytes, bytes - 1);
            ++checked;
        }
    std::printf("families checked at their largest layout: %d\n", checked);
}
