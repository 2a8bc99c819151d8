#include "runtime/kernel_provider.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>

#include "codegen/emitter.hpp"

namespace fajit {
namespace {

// Bumped whenever the library changes how it calls kernels (fa_params, launch shape),
// so entries built for an older library are never loaded by a newer one.
constexpr std::string_view abi_version = "fajit-abi-1";

cache::DiskCacheConfig disk_config(const Options& options) {
    cache::DiskCacheConfig config;
    config.root = options.cache_dir;
    config.max_bytes = options.cache_max_bytes;
    config.enabled = !options.cache_disabled && !options.cache_dir.empty();
    return config;
}

std::string join(const std::vector<std::string>& items) {
    std::string joined;
    for (const auto& item : items) joined += item + '\n';
    return joined;
}

}  // namespace

KernelProvider::KernelProvider(const Options& options, const std::vector<std::unique_ptr<Backend>>& backends)
    : templates_(options.template_dir),
      compile_options_(options.debug_counters ? std::vector<std::string>{"-DFAJIT_DEBUG_COUNTERS=1"}
                                              : std::vector<std::string>{}),
      backends_(backends),
      disk_(disk_config(options)) {}

const Backend& KernelProvider::backend_for(const std::string& arch) const {
    for (const auto& backend : backends_)
        if (backend->targets(arch)) {
            if (auto reason = backend->compiler_unavailable_reason(); !reason.empty())
                throw std::runtime_error("cannot compile for " + arch + ": " + reason);
            return *backend;
        }
    throw std::runtime_error("cannot compile for " + arch + ": this build has no backend for it");
}

std::string KernelProvider::emit(const KernelSpec& spec) const {
    if (auto error = validate(spec); !error.empty()) throw std::invalid_argument(error);
    return fajit::emit(spec, templates_).source;
}

CompiledKernel KernelProvider::get(const KernelSpec& spec) {
    if (auto error = validate(spec); !error.empty()) throw std::invalid_argument(error);
    const Backend& backend = backend_for(spec.arch);
    const EmittedKernel emitted = fajit::emit(spec, templates_);

    CompileRequest request;
    request.source = emitted.source;
    request.program_name = "fajit_" + std::string(to_string(spec.family)) + ".cu";
    request.name_expressions = {emitted.name_expression};
    request.options = compile_options_;
    request.arch = spec.arch;

    const std::string compiler = backend.compiler_identity();
    const cache::Key key = cache::KeyBuilder()
                               .add("abi", abi_version)
                               .add("spec", to_string(spec))
                               .add("arch", spec.arch)
                               .add("compiler", compiler)
                               .add("options", join(request.options))
                               .add("templates", emitted.template_bytes)
                               .add("source", emitted.source)
                               .finish();
    const std::string key_hex = key.hex();
    {
        std::lock_guard lock(mutex_);
        if (auto it = in_memory_.find(key_hex); it != in_memory_.end()) return it->second;
    }

    bool compiled_now = false;
    const cache::Entry entry = disk_.get_or_create(spec.arch, key, [&] {
        const auto start = std::chrono::steady_clock::now();
        CompileResult result = backend.compile(request);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!result.ok) throw CompileError("compiling " + to_string(spec) + " failed", result.log);
        compiled_now = true;
        spdlog::info("compiled {} in {:.2f} s", to_string(spec), seconds);
        cache::Entry produced;
        produced.metadata = {{"spec", to_string(spec)},
                             {"family", to_string(spec.family)},
                             {"arch", spec.arch},
                             {"compiler", compiler},
                             {"lowered_name", result.lowered_names.front()},
                             {"compile_seconds", seconds},
                             {"log", result.log}};
        produced.payload = std::move(result.code);
        return produced;
    });

    CompiledKernel kernel;
    kernel.spec = spec;
    kernel.key = key_hex;
    kernel.code = entry.payload;
    kernel.lowered_name = entry.metadata.value("lowered_name", "");
    kernel.log = entry.metadata.value("log", "");
    kernel.compile_seconds = entry.metadata.value("compile_seconds", 0.0);
    kernel.compiled_now = compiled_now;
    if (kernel.lowered_name.empty() || kernel.code.empty()) {
        // A well-formed entry without a kernel name is useless; never hand it to a loader.
        disk_.evict(spec.arch, key);
        throw std::runtime_error("cache entry " + key_hex + " for " + to_string(spec) + " has no kernel");
    }
    std::lock_guard lock(mutex_);
    in_memory_.emplace(key_hex, kernel);
    return kernel;
}

void KernelProvider::forget(const CompiledKernel& kernel) {
    disk_.evict(kernel.spec.arch, *cache::Key::from_hex(kernel.key));
    std::lock_guard lock(mutex_);
    in_memory_.erase(kernel.key);
}

}  // namespace fajit
