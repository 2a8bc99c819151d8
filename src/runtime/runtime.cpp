#include "fajit/runtime.hpp"

#include <spdlog/spdlog.h>

#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "dispatch/failed_variants.hpp"
#include "dispatch/function_cache.hpp"
#include "dispatch/variant_table.hpp"
#include "families/registry.hpp"
#include "runtime/kernel_arguments.hpp"
#include "runtime/kernel_provider.hpp"
#include "runtime/lru_map.hpp"
#include "runtime/sequence_index_checks.hpp"
#include "runtime/split_workspaces.hpp"
#include "runtime/tensor_maps.hpp"
#include "spec/arch.hpp"
#include "spec/shape_class.hpp"

namespace fajit {
namespace {

// Enough of a compiler log to recognize the failure in a warning; the whole log is in
// the CompileError and, with FAJIT_LOG_LEVEL=debug, in the debug log.
constexpr int summary_log_lines = 5;

std::string summarize(const std::string& what, const std::string& log) {
    std::string summary = what;
    std::istringstream lines(log);
    std::string line;
    for (int kept = 0; kept < summary_log_lines && std::getline(lines, line);)
        if (!line.empty()) {
            summary += "\n    " + line;
            ++kept;
        }
    return summary;
}

}  // namespace

std::string_view version() { return FAJIT_VERSION; }

struct Runtime::State {
    Options options;
    std::vector<std::unique_ptr<Backend>> backends;
    KernelProvider provider{options, backends};
    FunctionCache functions;  // the hot path; filled by resolve(), emptied of a kernel by unload_one()

    // Everything below is the cold path, under this lock. Kernels are unloaded only under it,
    // so a kernel found under it stays loaded until it is released.
    std::mutex mutex;
    struct Running {
        const Backend* backend;
        std::vector<DeviceInfo> devices;
    };
    std::optional<Running> running;  // found on first use
    // At most options.max_loaded_kernels, by (device, cache key).
    LruMap<std::pair<int, std::string>, std::unique_ptr<LoadedKernel>> loaded;
    FailedVariants failed{provider.disk_cache()};
    std::set<std::string> said;        // fallback messages already logged
    std::set<int> loaded_on;           // the devices kernels were loaded on
    SplitWorkspaces split_workspaces;  // its own lock: hot-path launches take it

    State(Options given, std::vector<std::unique_ptr<Backend>> given_backends)
        : options(std::move(given)), backends(std::move(given_backends)) {}

    // The kernels and split workspaces go with the runtime, and their launches may still be
    // queued on the GPU (unload_one says why that matters), so each device it used is
    // drained first. Never throws. A device that cannot be drained is logged at debug level
    // only: at process exit the GPU runtime may already be shut down, which is no fault.
    ~State() {
        for (const int ordinal : loaded_on) {
            try {
                running->backend->synchronize(ordinal);
            } catch (const std::exception& error) {
                spdlog::debug("fa-jit: waiting for device {} before unloading its kernels: {}", ordinal, error.what());
            }
        }
    }
    State(const State&) = delete;
    State& operator=(const State&) = delete;

    // The backend that runs kernels: the first whose runtime sees a device.
    const Running& running_backend() {
        if (running) return *running;
        std::string reasons;
        if (const Backend* backend = fajit::running_backend(backends, reasons))
            return running.emplace(Running{backend, backend->devices()});
        if (backends.empty()) throw Error(ErrorKind::no_device, "no GPU backend is built into this library");
        throw Error(ErrorKind::no_device, "no GPU device available (" + reasons + ")");
    }

    const DeviceInfo& device(int ordinal) {
        const Running& found = running_backend();
        if (ordinal >= static_cast<int>(found.devices.size()))
            throw std::invalid_argument("device=" + std::to_string(ordinal) + ": " +
                                        std::string(found.backend->name()) + " sees " +
                                        std::to_string(found.devices.size()) + " device(s)");
        return found.devices[static_cast<std::size_t>(ordinal)];
    }

    std::string compiler_identity(const std::string& arch) const {
        for (const auto& backend : backends)
            if (backend->targets(arch)) return backend->compiler_identity();
        return {};
    }

    // Launches a loaded kernel; a family that splits the key range gets its plan and a
    // workspace for this stream. The backend was found before any kernel was loaded.
    void launch(const KernelSpec& spec, LoadedKernel& kernel, int compute_units, const AttentionArgs& args,
                void* stream) {
        const FamilyDescriptor& family = family_of(spec);
        SplitWorkspace workspace;
        if (family.plan_splits) {
            const SplitPlan plan = family.plan_splits(spec, args, compute_units, options.decode_splits);
            workspace = split_workspaces.get(*running->backend, args.device, stream, plan);
        }
        KernelArguments arguments = make_kernel_arguments(args, workspace);
        if (family.reads_tensor_maps && options.tensor_maps) fill_tensor_maps(spec, args, *running->backend, arguments);
        LaunchShape shape = launch_shape(spec, args, compute_units, workspace.num_splits);
        shape.programmatic = options.programmatic_launch && sm_version(spec.arch) >= 90;
        if (workspace.num_splits > 1 && options.cluster_merge && sm_version(spec.arch) >= 90)
            shape.cluster_blocks = splits_cluster(kernel, shape);
        if (auto error = kernel.launch(shape, &arguments, sizeof arguments, stream); !error.empty())
            throw Error(ErrorKind::launch_failed, "launching " + to_string(spec) + ": " + error);
    }

    // The splits of each (sequence, KV head) as one cluster (the grid's x extent), where the
    // device holds every cluster of the launch at once: a plan that fills one wave of blocks
    // is held whole, and clusters left waiting for a second wave would cost as long as the
    // first (a plan split for its last wave has several waves, and merges through L2).
    static unsigned splits_cluster(LoadedKernel& kernel, LaunchShape shape) {
        shape.cluster_blocks = shape.grid[0];
        const long long clusters = static_cast<long long>(shape.grid[1]) * shape.grid[2];
        return kernel.clusters_held(shape) >= clusters ? shape.cluster_blocks : 1u;
    }

    // FAJIT_CHECK_INDICES: a batched call's indices, read back and checked before it runs.
    void check_indices(const AttentionArgs& args, void* stream) {
        if (!options.check_indices || args.kv_layout == KvLayout::dense) return;
        const Backend* backend;
        {
            std::lock_guard lock(mutex);
            // The ordinal first: reading indices back from a device that does not exist
            // would fail as a runtime error rather than name the argument.
            device(args.device);
            backend = running_backend().backend;
        }
        if (auto error = check_sequence_indices(args, *backend, stream); !error.empty())
            throw std::invalid_argument(error);
    }

    void say_once(spdlog::level::level_enum level, const std::string& message) {
        if (said.insert(message).second) spdlog::log(level, "{}", message);
    }

    // Unloads the least recently used kernel. One the hot path ran since the last look gets
    // a second chance, as long as chances are left; the function cache drops its entries
    // and waits for calls still launching it. Its launches may still be queued on the GPU,
    // and unloading a module does not wait for them (in CUDA or HIP), so the device is
    // drained before it is unloaded: a rare wait, at most once per load past the bound.
    void unload_one(std::size_t& second_chances) {
        for (;;) {
            auto& [key, kernel] = loaded.oldest();
            if (second_chances == 0 || !functions.take_recent_use(kernel.get())) break;
            --second_chances;
            loaded.find(key);  // now the most recently used
        }
        auto [key, kernel] = loaded.take_oldest();
        functions.remove(kernel.get());
        running->backend->synchronize(key.first);
        spdlog::debug("unloading kernel {} from device {}: over FAJIT_MAX_LOADED_KERNELS={}", key.second, key.first,
                      options.max_loaded_kernels);
    }

    // Compiles (or finds) spec and loads it on the device. Throws CompileError, Error with
    // load_failed when the loader rejects even a fresh compile, or std::runtime_error when
    // loading failed for another reason.
    LoadedKernel& load(int ordinal, const KernelSpec& spec) {
        const Backend& backend = *running_backend().backend;
        CompiledKernel kernel = provider.get(spec);
        if (auto* found = loaded.find({ordinal, kernel.key})) return **found;
        // Room first, so the kernel about to be loaded is never the one unloaded.
        for (std::size_t second_chances = loaded.size(); loaded.size() >= options.max_loaded_kernels;)
            unload_one(second_chances);
        std::unique_ptr<LoadedKernel> module;
        try {
            module = backend.load(ordinal, kernel.code, kernel.lowered_name);
        } catch (const CodeRejected& rejected) {
            // The entry passed its checksum yet the loader refused it (say, a driver
            // update): compile it afresh once rather than failing forever.
            spdlog::warn("{}; recompiling {}", rejected.what(), to_string(spec));
            provider.forget(kernel);
            kernel = provider.get(spec);
            try {
                module = backend.load(ordinal, kernel.code, kernel.lowered_name);
            } catch (const CodeRejected& again) {
                throw Error(ErrorKind::load_failed, "loading " + to_string(spec) + " failed: " + again.what());
            }
        }
        // Any other failure (out of memory, the device's context) leaves the cache entry
        // alone and reaches the caller; the next call loads again.
        loaded_on.insert(ordinal);
        return *loaded.insert({ordinal, kernel.key}, std::move(module));
    }

    // Loads a specialized variant, or records why it cannot run and returns null so the
    // caller falls back. Under FAJIT_STRICT the failure is thrown instead.
    LoadedKernel* load_specialized(int ordinal, const KernelSpec& spec) {
        const std::string text = to_string(spec);
        const std::string compiler = compiler_identity(spec.arch);
        std::optional<VariantFailure> failure = failed.find(spec, compiler);
        if (failure) {
            failure->summary = text + " failed before: " + failure->summary;
        } else {
            try {
                return &load(ordinal, spec);
            } catch (const CompileError& error) {
                spdlog::debug("{}\n{}", error.what(), error.log());
                failure =
                    VariantFailure{ErrorKind::compile_failed, summarize(error.what(), error.log()), error.rejected()};
            } catch (const Error& error) {
                if (error.kind() != ErrorKind::load_failed) throw;
                failure = VariantFailure{ErrorKind::load_failed, error.what()};
            }
            failed.record(spec, compiler, *failure);
            if (!failure->verdict) failure->summary += " (for this process only: not a verdict on the source)";
        }
        if (options.strict)
            throw Error(failure->kind, "FAJIT_STRICT=1 refuses the fallback to " + std::string(fallback_family().name) +
                                           ": " + failure->summary);
        say_once(spdlog::level::warn,
                 failure->summary + "\n  running the fallback, " + std::string(fallback_family().name) + ", instead");
        return nullptr;
    }

    // The first call of a dispatch key: select, prepare, fall back where needed, publish.
    // Under the lock, which keeps the variant's kernel loaded while the caller uses it.
    const ResolvedVariant& resolve(std::uint64_t key, const ShapeClass& shape, int ordinal) {
        if (const ResolvedVariant* found = functions.find(key)) return *found;
        const DeviceInfo& info = device(ordinal);
        const std::string& arch = info.arch;
        const Selection selection = select_variant(arch, shape, options);
        if (!selection.fallback_reason.empty()) {
            if (options.strict && !selection.forced)
                throw Error(ErrorKind::unsupported, "FAJIT_STRICT=1 refuses the fallback to " +
                                                        std::string(fallback_family().name) + ": " +
                                                        selection.fallback_reason);
            say_once(selection.forced ? spdlog::level::info : spdlog::level::warn,
                     selection.fallback_reason + "; running " + to_string(selection.spec));
        }
        KernelSpec spec = selection.spec;
        LoadedKernel* kernel = is_fallback(spec) ? &load(ordinal, spec) : load_specialized(ordinal, spec);
        if (!kernel) {
            spec = fallback_spec(shape, arch);
            kernel = &load(ordinal, spec);
        }
        return *functions.insert(key, std::move(spec), kernel, info.compute_units);
    }
};

Runtime::Runtime(Options options) : Runtime(std::move(options), make_backends()) {}

Runtime::Runtime(Options options, std::vector<std::unique_ptr<Backend>> backends)
    : state_(std::make_unique<State>(std::move(options), std::move(backends))) {
    if (state_->options.max_loaded_kernels == 0)
        throw InvalidOption("max_loaded_kernels=0: at least one kernel must stay loaded to run");
    if (auto level = spdlog::level::from_str(state_->options.log_level);
        level != spdlog::level::off || state_->options.log_level == "off")
        spdlog::set_level(level);
}

Runtime::~Runtime() = default;

const Options& Runtime::options() const { return state_->options; }

std::string Runtime::emit(const KernelSpec& spec) const { return state_->provider.emit(spec); }

CompiledKernel Runtime::prepare(const KernelSpec& spec) { return state_->provider.get(spec); }

std::vector<Device> Runtime::devices() const {
    std::vector<Device> found;
    for (const auto& backend : state_->backends)
        for (const auto& info : backend->devices())
            found.push_back({std::string(backend->name()), info.ordinal, info.name, info.arch, info.compute_units,
                             info.shared_memory_per_block});
    return found;
}

std::vector<std::string> Runtime::unavailable_backends() const {
    std::vector<std::string> reasons;
    for (const auto& backend : state_->backends) {
        if (auto reason = backend->compiler_unavailable_reason(); !reason.empty())
            reasons.push_back(std::string(backend->name()) + " compiler: " + reason);
        if (auto reason = backend->runtime_unavailable_reason(); !reason.empty())
            reasons.push_back(std::string(backend->name()) + " runtime: " + reason);
    }
    return reasons;
}

KernelSpec Runtime::select(const AttentionArgs& args) {
    if (auto error = check_arguments(args); !error.empty()) throw std::invalid_argument(error);
    const ShapeClass shape = classify(args);
    std::lock_guard lock(state_->mutex);
    return state_->resolve(dispatch_key(args.device, shape), shape, args.device).spec;
}

void Runtime::attention(const AttentionArgs& args, void* stream) {
    if (auto error = check_arguments(args); !error.empty()) throw std::invalid_argument(error);
    state_->check_indices(args, stream);
    const ShapeClass shape = classify(args);
    const std::uint64_t key = dispatch_key(args.device, shape);
    {
        const FunctionCache::Reader reader(state_->functions);
        if (const ResolvedVariant* variant = state_->functions.find(key)) {
            variant->mark_used();
            state_->launch(variant->spec, *variant->kernel, variant->compute_units, args, stream);
            return;
        }
    }
    // The first call of the key, or its kernel was unloaded: the cold path, which launches
    // under the lock that keeps the kernel loaded.
    std::lock_guard lock(state_->mutex);
    const ResolvedVariant& variant = state_->resolve(key, shape, args.device);
    state_->launch(variant.spec, *variant.kernel, variant.compute_units, args, stream);
}

void Runtime::run(const KernelSpec& spec, const AttentionArgs& args, void* stream) {
    if (auto error = check_arguments(args); !error.empty()) throw std::invalid_argument(error);
    if (spec.head_dim != args.head_dim || value_head_dim(spec) != value_head_dim(args) || spec.dtype != args.dtype ||
        spec.out_dtype != args.o_dtype || spec.causal != args.causal)
        throw std::invalid_argument("spec " + to_string(spec) +
                                    " does not match the arguments' head_dim, head_dim_v, dtype, o_dtype or causal");
    if (spec.kv_layout != args.kv_layout ||
        (spec.kv_layout == KvLayout::paged && spec.page_size != args.sequences.page_size))
        throw std::invalid_argument("spec " + to_string(spec) + " does not match the arguments' kv_layout (" +
                                    std::string(to_string(args.kv_layout)) + ") or page size");
    const ShapeClass shape = classify(args);
    for (const auto& [name, in_spec, in_args] :
         {std::tuple<std::string_view, bool, bool>{"window", spec.window, shape.window},
          {"softcap", spec.softcap, shape.softcap},
          {"sinks", spec.sinks, shape.sinks}})
        if (in_spec != in_args)
            throw std::invalid_argument("spec " + to_string(spec) + (in_spec ? " has " : " lacks ") +
                                        std::string(name) + ", which the arguments " +
                                        (in_args ? "use" : "do not use"));
    if (const FamilyDescriptor& family = family_of(spec); family.refuses_shape)
        if (auto reason = family.refuses_shape(spec, shape); !reason.empty())
            throw std::invalid_argument("spec " + to_string(spec) + " cannot run these arguments: " + reason);
    state_->check_indices(args, stream);
    // Under the lock, which keeps the kernel loaded until it is launched.
    std::lock_guard lock(state_->mutex);
    const int compute_units = state_->device(args.device).compute_units;
    state_->launch(spec, state_->load(args.device, spec), compute_units, args, stream);
}

}  // namespace fajit
