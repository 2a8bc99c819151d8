// The scalar kernel compiles through HIPRTC for AMD targets and through NVRTC for
// NVIDIA ones, and each produces the kind of object its loader expects. No GPU is
// needed; a backend whose compiler library is absent is skipped with its reason.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "backend/backend.hpp"
#include "support/compile_support.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

constexpr std::uint16_t elf_machine_amdgpu = 224;
constexpr std::uint16_t elf_machine_cuda = 190;

std::uint16_t elf_machine(const std::vector<std::byte>& code) {
    REQUIRE(code.size() > 64);
    REQUIRE(std::memcmp(code.data(),
                        "\x7f"
                        "ELF",
                        4) == 0);
    std::uint16_t machine;
    std::memcpy(&machine, code.data() + 18, 2);
    return machine;
}

std::uint32_t elf_flags(const std::vector<std::byte>& code) {
    std::uint32_t flags;
    std::memcpy(&flags, code.data() + 48, 4);
    return flags;
}

bool contains(const std::vector<std::byte>& code, const std::string& text) {
    const std::string_view bytes(reinterpret_cast<const char*>(code.data()), code.size());
    return bytes.find(text) != std::string_view::npos;
}

KernelSpec spec_for(const std::string& arch, int head_dim, DType dtype, CausalMode causal) {
    KernelSpec spec;
    spec.family = "scalar";
    spec.arch = arch;
    spec = with_family_defaults(spec);
    spec.head_dim = head_dim;
    spec.dtype = dtype;
    if (dtype == DType::e4m3) spec.out_dtype = DType::bf16;
    spec.causal = causal;
    spec.rescale_margin = 10.0f;
    return spec;
}

// source compiled for arch, asking for the kernel named `kernel`.
CompileResult compile_source(const Backend& backend, const std::string& arch, const std::string& source,
                             const std::string& kernel) {
    CompileRequest request;
    request.source = source;
    request.program_name = "source.cu";
    request.name_expressions = {kernel};
    request.arch = arch;
    return backend.compile(request);
}

}  // namespace

TEST_CASE("HIPRTC builds AMDGPU code objects naming their full target") {
    for (const std::string arch : {"gfx1151", "gfx1100", "gfx942:sramecc+:xnack-", "gfx90a"}) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::e4m3}) {
            const auto result = compile_directly(spec_for(arch, 128, dtype, CausalMode::bottom_right), *backend);
            REQUIRE_MESSAGE(result.ok, arch, ": ", result.log);
            CHECK(elf_machine(result.code) == elf_machine_amdgpu);
            CHECK_MESSAGE(contains(result.code, "amdgcn-amd-amdhsa--" + arch), arch);
            REQUIRE(result.lowered_names.size() == 1);
            CHECK(result.lowered_names[0].find("fa_scalar") != std::string::npos);
        }
    }
}

TEST_CASE("NVRTC builds cubins for the requested SM") {
    for (const auto& [arch, sm] : {std::pair<std::string, unsigned>{"sm_80", 80}, {"sm_90a", 90}}) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::e4m3}) {
            const auto result = compile_directly(spec_for(arch, 128, dtype, CausalMode::bottom_right), *backend);
            REQUIRE_MESSAGE(result.ok, arch, ": ", result.log);
            CHECK(elf_machine(result.code) == elf_machine_cuda);
            CHECK(((elf_flags(result.code) >> 8) & 0xffu) == sm);  // cubin e_flags carry the SM version
            REQUIRE(result.lowered_names.size() == 1);
            CHECK(result.lowered_names[0].find("fa_scalar") != std::string::npos);
        }
    }
}

TEST_CASE("every head dim and causal mode of the scalar family compiles") {
    for (const std::string arch : {"gfx1151", "sm_90a"}) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        int compiled = 0;
        for (int head_dim = 16; head_dim <= 256; head_dim += 8) {
            const auto causal = static_cast<CausalMode>(head_dim / 8 % 3);
            const auto result = compile_directly(spec_for(arch, head_dim, DType::f16, causal), *backend);
            CHECK_MESSAGE(result.ok, arch, " d=", head_dim, ": ", result.log);
            compiled += result.ok;
        }
        MESSAGE(arch << ": " << compiled << " head dims compiled");
    }
}

TEST_CASE("a compile error returns the compiler's log, naming the call that failed, and no code") {
    for (const std::string arch : {"gfx1151", "sm_90a"}) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const auto result =
            compile_source(*backend, arch, "__global__ void broken() { this_is_not_declared(); }", "broken");
        CHECK_FALSE(result.ok);
        CHECK(result.rejected);  // a verdict on the source, which the runtime records
        CHECK(result.code.empty());
        const std::size_t compiler_says = result.log.find("this_is_not_declared");
        CHECK_MESSAGE(compiler_says != std::string::npos, result.log);
        // The failed call is named first, then the compiler's own log.
        CHECK_MESSAGE(result.log.find("CompileProgram: ") < compiler_says, result.log);
    }
}

TEST_CASE("a source without the kernel asked for is rejected, with no code") {
    for (const std::string arch : {"gfx1151", "sm_90a"}) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const auto result = compile_source(*backend, arch, "__global__ void present() {}", "absent");
        CHECK_FALSE(result.ok);
        CHECK_MESSAGE(result.rejected, result.log);
        CHECK(result.code.empty());
        CHECK_MESSAGE(result.log.find("absent") != std::string::npos, result.log);
    }
}
