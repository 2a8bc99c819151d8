// The launch hands the bytes of the host's KernelArguments to the kernel as its fa_params
// (declared in the prelude), so the two structs must agree field by field, not only in
// total size. Each compiler present compiles the emitted source of a kernel followed by
// static_asserts on each field's offset and size, against the host struct's. No GPU is
// needed; a backend whose compiler library is absent is skipped with its reason.
//
// NVRTC has no offsetof (no __builtin_offsetof, no <cstddef>), so the device side reads
// offsets the way both compilers evaluate in constant expressions: a field's address
// compared with the address of a byte of a char array sharing a union with the struct.
#include <doctest/doctest.h>

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "codegen/emitter.hpp"
#include "runtime/kernel_arguments.hpp"
#include "support/compile_support.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct Field {
    const char* name;
    std::size_t offset;
    std::size_t size;
    std::size_t alignment;
};

// A field's name, offset, size and alignment in the host struct.
#define FAJIT_HOST_FIELD(name)                                                   \
    Field(#name, offsetof(KernelArguments, name), sizeof(KernelArguments::name), \
          alignof(decltype(KernelArguments::name)))

// Every field of KernelArguments, in declaration order; the first test case proves none is missing.
const std::vector<Field> host_fields = {FAJIT_HOST_FIELD(q),
                                        FAJIT_HOST_FIELD(k),
                                        FAJIT_HOST_FIELD(v),
                                        FAJIT_HOST_FIELD(o),
                                        FAJIT_HOST_FIELD(lse),
                                        FAJIT_HOST_FIELD(debug_counters),
                                        FAJIT_HOST_FIELD(q_stride),
                                        FAJIT_HOST_FIELD(k_stride),
                                        FAJIT_HOST_FIELD(v_stride),
                                        FAJIT_HOST_FIELD(o_stride),
                                        FAJIT_HOST_FIELD(batch),
                                        FAJIT_HOST_FIELD(heads_q),
                                        FAJIT_HOST_FIELD(heads_kv),
                                        FAJIT_HOST_FIELD(len_q),
                                        FAJIT_HOST_FIELD(len_k),
                                        FAJIT_HOST_FIELD(scale),
                                        FAJIT_HOST_FIELD(cu_seqlens_q),
                                        FAJIT_HOST_FIELD(cu_seqlens_k),
                                        FAJIT_HOST_FIELD(block_table),
                                        FAJIT_HOST_FIELD(kv_lens),
                                        FAJIT_HOST_FIELD(split_partials),
                                        FAJIT_HOST_FIELD(split_arrivals),
                                        FAJIT_HOST_FIELD(total_q),
                                        FAJIT_HOST_FIELD(total_k),
                                        FAJIT_HOST_FIELD(max_pages_per_seq),
                                        FAJIT_HOST_FIELD(num_pages),
                                        FAJIT_HOST_FIELD(num_splits),
                                        FAJIT_HOST_FIELD(sinks),
                                        FAJIT_HOST_FIELD(q_descale),
                                        FAJIT_HOST_FIELD(k_descale),
                                        FAJIT_HOST_FIELD(v_descale),
                                        FAJIT_HOST_FIELD(window_left),
                                        FAJIT_HOST_FIELD(window_right),
                                        FAJIT_HOST_FIELD(softcap),
                                        FAJIT_HOST_FIELD(descale_heads),
                                        FAJIT_HOST_FIELD(tensor_maps_ready),
                                        FAJIT_HOST_FIELD(tensor_maps)};

std::size_t round_up(std::size_t value, std::size_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

// One static_assert per fact about fa_params: its size, and each field's offset and size.
std::string layout_assertions(const std::vector<Field>& fields, std::size_t total) {
    std::string text = "\nstatic_assert(sizeof(fa_params) == " + std::to_string(total) +
                       ", \"fa-jit layout: sizeof(fa_params) differs from the host's " + std::to_string(total) +
                       "\");\n";
    text +=
        "union fa_params_layout_probe {\n"
        "    fa_params params;\n"
        "    unsigned char bytes[sizeof(fa_params)];\n"
        "};\n"
        "constexpr fa_params_layout_probe fa_layout_probe{};\n";
    for (const Field& field : fields) {
        const std::string name = field.name;
        text += "static_assert((const void*)&fa_layout_probe.params." + name +
                " == (const void*)&fa_layout_probe.bytes[" + std::to_string(field.offset) +
                "], \"fa-jit layout: fa_params::" + name + " is not at the host's offset " +
                std::to_string(field.offset) + "\");\n";
        text += "static_assert(sizeof(fa_params::" + name + ") == " + std::to_string(field.size) +
                ", \"fa-jit layout: fa_params::" + name + " is not the host's " + std::to_string(field.size) +
                " bytes\");\n";
    }
    return text;
}

// A kernel's emitted source, so the prelude arrives exactly as the library sends it, with the assertions after it.
CompileResult compile_with_assertions(const Backend& backend, const std::string& arch, const std::string& assertions) {
    const KernelSpec spec = *parse_spec("family=scalar,d=64,dtype=f16,arch=" + arch).spec;
    const EmittedKernel emitted = emit(spec, TemplateStore());
    CompileRequest request;
    request.source = emitted.source + assertions;
    request.program_name = "fa_params_layout.cu";
    request.name_expressions = {emitted.name_expression};
    request.arch = arch;
    return backend.compile(request);
}

// The fields named by the failed layout assertions of a compiler log (which also quotes
// the source lines, so only the lines of the errors themselves count).
std::vector<std::string> failed_assertions(const std::string& log) {
    std::vector<std::string> fields;
    std::istringstream lines(log);
    std::string line;
    const std::string marker = "fa-jit layout: ";
    while (std::getline(lines, line)) {
        const auto at = line.find(marker);
        if (line.find("static assertion failed") == std::string::npos || at == std::string::npos) continue;
        const auto name = line.substr(at + marker.size());
        fields.push_back(name.substr(0, name.find(' ')));
    }
    return fields;
}

// One AMD and one NVIDIA target: the two compilers, whichever of them this build has.
constexpr const char* target_archs[] = {"gfx1151", "sm_80"};

}  // namespace

TEST_CASE("the host field list covers KernelArguments, only padding between its fields") {
    std::size_t end = 0;
    for (const Field& field : host_fields) {
        INFO(field.name);
        CHECK(field.offset == round_up(end, field.alignment));
        end = field.offset + field.size;
    }
    CHECK(round_up(end, alignof(KernelArguments)) == sizeof(KernelArguments));
}

TEST_CASE("fa_params matches KernelArguments field by field under each compiler") {
    const std::string assertions = layout_assertions(host_fields, sizeof(KernelArguments));
    for (const char* arch : target_archs) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const CompileResult result = compile_with_assertions(*backend, arch, assertions);
        CHECK_MESSAGE(result.ok, arch, ": ", result.log);
    }
}

TEST_CASE("the layout check fails, naming the field, when an offset is wrong") {
    std::vector<Field> shifted = host_fields;
    for (Field& field : shifted)
        if (std::string(field.name) == "len_k") field.offset += 4;
    const std::string assertions = layout_assertions(shifted, sizeof(KernelArguments));
    for (const char* arch : target_archs) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const CompileResult result = compile_with_assertions(*backend, arch, assertions);
        CHECK_FALSE(result.ok);
        CHECK_MESSAGE(failed_assertions(result.log) == std::vector<std::string>{"fa_params::len_k"}, arch, ": ",
                      result.log);
    }
}
