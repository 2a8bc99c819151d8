#include "runtime/kernel_provider.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>

#include "backend/dynamic_library.hpp"
#include "cache/layout.hpp"
#include "codegen/emitter.hpp"
#include "codegen/ptxas_report.hpp"
#include "runtime/disk_cache_config.hpp"
#include "runtime/kernel_key.hpp"

namespace fajit {

KernelProvider::KernelProvider(const Options& options, const std::vector<std::unique_ptr<Backend>>& backends)
    : templates_(options.template_dir),
      compile_options_(options.debug_counters ? std::vector<std::string>{"-DFAJIT_DEBUG_COUNTERS=1"}
                                              : std::vector<std::string>{}),
      backends_(backends),
      disk_(disk_cache_config(options)),
      in_memory_bound_(options.max_loaded_kernels) {
    // The compiler identity in every key hashes the compiler libraries; remembering those
    // hashes in the cache spares a new process reading them again before its first hit.
    const cache::DiskCacheConfig& disk = disk_.config();
    remember_fingerprints_in(disk.enabled ? cache::Layout(disk.root).fingerprint_memo_path() : std::filesystem::path());
}

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
    request.program_name = "fajit_" + spec.family + ".cu";
    request.name_expressions = {emitted.name_expression};
    request.options = compile_options_;
    request.arch = spec.arch;

    const std::string compiler = backend.compiler_identity();
    const cache::Key key =
        kernel_key({to_string(spec), spec.arch, compiler, request.options, emitted.template_bytes, emitted.source});
    const std::string key_hex = key.hex();
    {
        std::lock_guard lock(mutex_);
        if (const CompiledKernel* found = in_memory_.find(key_hex)) {
            CompiledKernel remembered = *found;
            remembered.compiled_now = false;
            return remembered;
        }
    }

    bool compiled_now = false;
    const auto produce = [&] {
        const auto start = std::chrono::steady_clock::now();
        CompileResult result = backend.compile(request);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!result.ok) throw CompileError("compiling " + to_string(spec) + " failed", result.log, result.rejected);
        compiled_now = true;
        spdlog::info("compiled {} in {:.2f} s", to_string(spec), seconds);
        // The dispatcher's tiles spill nowhere (the compile suites check it); a pinned tile
        // (FAJIT_TILE, --block-k, ...) may, and then runs slower than its tile intends.
        if (const auto ptxas = ptxas_report_from_log(result.log); ptxas && ptxas->spills())
            spdlog::warn("{}: ptxas spilled {} bytes of registers to local memory ({} registers)", to_string(spec),
                         ptxas->spill_store_bytes, ptxas->registers);
        cache::Entry produced;
        produced.metadata = {{"spec", to_string(spec)},
                             {"family", spec.family},
                             {"arch", spec.arch},
                             {"compiler", compiler},
                             {"lowered_name", result.lowered_names.front()},
                             {"compile_seconds", seconds},
                             {"log", result.log}};
        produced.payload = std::move(result.code);
        return produced;
    };

    CompiledKernel kernel;
    kernel.spec = spec;
    kernel.key = key_hex;
    // An entry can pass its checksum and still lack a kernel name (written by a
    // broken producer); such an entry is replaced by a fresh compile, once.
    for (int attempt = 0; attempt < 2; ++attempt) {
        // A fleet's store is shared: its entry must name the arch and compiler this key is for.
        const cache::Entry entry =
            disk_.get_or_create(spec.arch, key, produce, {{"arch", spec.arch}, {"compiler", compiler}});
        kernel.code = entry.payload;
        kernel.lowered_name = entry.metadata.value("lowered_name", "");
        kernel.log = entry.metadata.value("log", "");
        kernel.compile_seconds = entry.metadata.value("compile_seconds", 0.0);
        if (!kernel.lowered_name.empty() && !kernel.code.empty()) break;
        spdlog::warn("cache entry {} for {} has no kernel; compiling it again", key_hex, to_string(spec));
        disk_.evict(spec.arch, key);
        if (attempt == 1) throw std::runtime_error("compiling " + to_string(spec) + " produced no kernel");
    }
    kernel.compiled_now = compiled_now;
    kernel.store_error = disk_.store_error(spec.arch, key);
    std::lock_guard lock(mutex_);
    in_memory_.insert(key_hex, kernel);
    while (in_memory_.size() > in_memory_bound_) in_memory_.take_oldest();
    return kernel;
}

void KernelProvider::forget(const CompiledKernel& kernel) {
    disk_.evict(kernel.spec.arch, *cache::Key::from_hex(kernel.key));
    std::lock_guard lock(mutex_);
    in_memory_.erase(kernel.key);
}

}  // namespace fajit
