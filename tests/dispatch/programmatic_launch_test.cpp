// Programmatic dependent launch: which launches ask for it (sm_90 and later, while
// FAJIT_PROGRAMMATIC_LAUNCH allows), and that every kernel template waits for the kernels
// before it as its first statement, which is what makes such a launch safe.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "codegen/template_store.hpp"
#include "families/registry.hpp"
#include "fajit/runtime.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

// Whether the latest launch of a call on a device of `arch` was programmatic.
bool launched_programmatic(const std::string& arch, bool option) {
    Options options;
    options.cache_disabled = true;
    options.log_level = "error";
    options.programmatic_launch = option;
    auto counters = std::make_shared<FakeBackendCounters>();
    counters->record_arguments = true;
    FakeBackendConfig device;
    device.arch = arch;
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(make_fake_backend(device, counters));
    Runtime runtime(std::move(options), std::move(backends));

    alignas(64) static char memory[4][256];
    AttentionArgs args;
    args.q = memory[0];
    args.k = memory[1];
    args.v = memory[2];
    args.o = memory[3];
    args.dtype = DType::f16;
    args.batch = args.heads_q = args.heads_kv = 1;
    args.len_q = args.len_k = 64;
    args.head_dim = args.head_dim_v = 128;
    args.q_strides = args.k_strides = args.v_strides = args.o_strides = {64 * 128, 64 * 128, 128};
    args.scale = 0.088f;
    runtime.attention(args, nullptr);
    REQUIRE(counters->launches == 1);
    return counters->last_shape.programmatic;
}

}  // namespace

TEST_CASE("launches are programmatic on sm_90 and later unless FAJIT_PROGRAMMATIC_LAUNCH is off") {
    CHECK(launched_programmatic("sm_90a", true));
    CHECK(launched_programmatic("sm_100a", true));
    CHECK_FALSE(launched_programmatic("sm_90a", false));
    CHECK_FALSE(launched_programmatic("sm_80", true));  // griddepcontrol needs sm_90
    CHECK_FALSE(launched_programmatic("gfx1151", true));
}

TEST_CASE("FAJIT_PROGRAMMATIC_LAUNCH is a flag, on by default") {
    CHECK(Options::from_environment({}).programmatic_launch);
    CHECK_FALSE(Options::from_environment({{"FAJIT_PROGRAMMATIC_LAUNCH", "0"}}).programmatic_launch);
    CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_PROGRAMMATIC_LAUNCH", "2"}}),
                         doctest::Contains("FAJIT_PROGRAMMATIC_LAUNCH=2"), InvalidOption);
}

TEST_CASE("every kernel template waits for the kernels before it as its first statement") {
    const TemplateStore templates;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        CAPTURE(family.name);
        const std::string text(templates.text(family.template_file));
        // The kernel's definition: its name, its one parameter, then the body's first statement.
        const std::regex first_statement(std::string(family.kernel) + R"(\([^)]*fa_params p\) \{\s*(\S[^;]*;))");
        std::smatch match;
        REQUIRE(std::regex_search(text, match, first_statement));
        CHECK(match[1].str() == "fa_wait_for_prior_kernels();");
    }
}
