// The exported C functions of include/fajit/fajit.h.
#include <map>
#include <stdexcept>
#include <string>

#include "capi/attention_args.hpp"
#include "capi/call_guard.hpp"
#include "fajit/fajit.h"
#include "fajit/runtime.hpp"

// The handle is the C++ runtime itself.
struct fajit_runtime {
    fajit::Runtime runtime;
};

namespace {

fajit::Runtime& runtime_of(fajit_runtime* handle) {
    if (!handle) throw std::invalid_argument("runtime=null: create one with fajit_runtime_create");
    return handle->runtime;
}

// Which enum values fajit_attention_args carries, checked once here against the C++ ones.
static_assert(FAJIT_DTYPE_F16 == static_cast<int>(fajit::DType::f16) &&
              FAJIT_DTYPE_BF16 == static_cast<int>(fajit::DType::bf16) &&
              FAJIT_DTYPE_F32 == static_cast<int>(fajit::DType::f32));
static_assert(FAJIT_CAUSAL_NONE == static_cast<int>(fajit::CausalMode::none) &&
              FAJIT_CAUSAL_TOP_LEFT == static_cast<int>(fajit::CausalMode::top_left) &&
              FAJIT_CAUSAL_BOTTOM_RIGHT == static_cast<int>(fajit::CausalMode::bottom_right));

}  // namespace

extern "C" {

const char* fajit_version(void) { return fajit::version().data(); }

const char* fajit_last_error(void) { return fajit::capi::last_error(); }

const char* fajit_status_name(fajit_status status) {
    switch (status) {
        case FAJIT_SUCCESS:
            return "FAJIT_SUCCESS";
        case FAJIT_ERROR_INVALID_ARGUMENT:
            return "FAJIT_ERROR_INVALID_ARGUMENT";
        case FAJIT_ERROR_INVALID_OPTION:
            return "FAJIT_ERROR_INVALID_OPTION";
        case FAJIT_ERROR_NO_DEVICE:
            return "FAJIT_ERROR_NO_DEVICE";
        case FAJIT_ERROR_UNSUPPORTED:
            return "FAJIT_ERROR_UNSUPPORTED";
        case FAJIT_ERROR_COMPILE_FAILED:
            return "FAJIT_ERROR_COMPILE_FAILED";
        case FAJIT_ERROR_LOAD_FAILED:
            return "FAJIT_ERROR_LOAD_FAILED";
        case FAJIT_ERROR_LAUNCH_FAILED:
            return "FAJIT_ERROR_LAUNCH_FAILED";
        case FAJIT_ERROR_RUNTIME:
            return "FAJIT_ERROR_RUNTIME";
    }
    return "unknown status";
}

fajit_status fajit_runtime_create(const fajit_setting* settings, size_t count, fajit_runtime** runtime) {
    return fajit::capi::guarded([&] {
        if (!runtime) throw std::invalid_argument("runtime=null: a place for the new runtime is required");
        *runtime = nullptr;
        if (!settings && count != 0) throw std::invalid_argument("settings=null with count=" + std::to_string(count));
        std::map<std::string, std::string, std::less<>> overrides;
        for (size_t i = 0; i < count; ++i) {
            if (!settings[i].name)
                throw std::invalid_argument("settings[" + std::to_string(i) + "].name=null: a name is required");
            overrides[settings[i].name] = settings[i].value ? settings[i].value : "";
        }
        *runtime = new fajit_runtime{fajit::Runtime(fajit::Options::from_environment(overrides))};
    });
}

void fajit_runtime_destroy(fajit_runtime* runtime) { delete runtime; }

fajit_status fajit_warm(fajit_runtime* runtime, const char* const* specs, size_t count) {
    return fajit::capi::guarded([&] {
        fajit::Runtime& target = runtime_of(runtime);
        if (!specs && count != 0) throw std::invalid_argument("specs=null with count=" + std::to_string(count));
        for (size_t i = 0; i < count; ++i) {
            const std::string index = "specs[" + std::to_string(i) + "]";
            if (!specs[i]) throw std::invalid_argument(index + "=null: a canonical spec string is required");
            const auto parsed = fajit::parse_spec(specs[i]);
            if (!parsed.spec) throw std::invalid_argument(index + "=\"" + specs[i] + "\": " + parsed.error);
            try {
                target.prepare(*parsed.spec);
            } catch (const fajit::CompileError& error) {
                throw fajit::CompileError(index + ": " + error.what(), error.log(), error.rejected());
            }
        }
    });
}

fajit_status fajit_attention(fajit_runtime* runtime, const fajit_attention_args* args, void* stream) {
    return fajit::capi::guarded([&] { runtime_of(runtime).attention(fajit::capi::to_attention_args(args), stream); });
}

fajit_status fajit_selected_variant(fajit_runtime* runtime, const fajit_attention_args* args, char* buffer,
                                    size_t size) {
    return fajit::capi::guarded([&] {
        fajit::Runtime& target = runtime_of(runtime);
        const fajit::AttentionArgs converted = fajit::capi::to_attention_args(args);
        if (!buffer) throw std::invalid_argument("buffer=null: a buffer for the spec is required");
        const std::string spec = fajit::to_string(target.select(converted));
        if (spec.size() + 1 > size)
            throw std::invalid_argument("size=" + std::to_string(size) + ": the spec needs " +
                                        std::to_string(spec.size() + 1) + " bytes");
        spec.copy(buffer, spec.size());
        buffer[spec.size()] = '\0';
    });
}

}  // extern "C"
