#include "fajit/runtime.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <stdexcept>

#include "runtime/kernel_arguments.hpp"
#include "runtime/kernel_provider.hpp"
#include "runtime/launch_geometry.hpp"
#include "spec/arch.hpp"

namespace fajit {
namespace {

// Margin (natural-log units) every family gets unless the spec says otherwise:
// exp(10) = 22026 keeps unnormalized probabilities inside f16's range.
constexpr float default_rescale_margin = 10.0f;

}  // namespace

struct Runtime::State {
    Options options;
    std::vector<std::unique_ptr<Backend>> backends = make_backends();
    KernelProvider provider{options, backends};
    std::mutex mutex;
    std::map<std::pair<int, std::string>, std::unique_ptr<LoadedKernel>> loaded;  // (device, key)

    explicit State(Options given) : options(std::move(given)) {}

    // The backend that runs kernels: the first whose runtime sees a device.
    const Backend& running_backend() const {
        std::string reasons;
        for (const auto& backend : backends) {
            const auto reason = backend->runtime_unavailable_reason();
            if (reason.empty()) return *backend;
            reasons += std::string(backend->name()) + ": " + reason + "; ";
        }
        if (backends.empty()) throw std::runtime_error("no GPU backend is built into this library");
        throw std::runtime_error("no GPU device available (" + reasons.substr(0, reasons.size() - 2) + ")");
    }
};

Runtime::Runtime(Options options) : state_(std::make_unique<State>(std::move(options))) {
    if (auto level = spdlog::level::from_str(state_->options.log_level); level != spdlog::level::off ||
                                                                        state_->options.log_level == "off")
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

KernelSpec Runtime::select(const AttentionArgs& args) const {
    const Backend& backend = state_->running_backend();
    const auto devices = backend.devices();
    if (args.device >= static_cast<int>(devices.size()))
        throw std::invalid_argument("device=" + std::to_string(args.device) + ": " + std::string(backend.name()) +
                                    " sees " + std::to_string(devices.size()) + " device(s)");
    KernelSpec spec;
    spec.family = Family::scalar;
    spec.arch = devices[static_cast<std::size_t>(args.device)].arch;
    spec = with_family_defaults(spec);
    spec.head_dim = args.head_dim;
    spec.dtype = args.dtype;
    spec.causal = args.causal;
    spec.rescale_margin = default_rescale_margin;
    return spec;
}

void Runtime::attention(const AttentionArgs& args, void* stream) {
    if (auto error = check_arguments(args); !error.empty()) throw std::invalid_argument(error);
    run(select(args), args, stream);
}

void Runtime::run(const KernelSpec& spec, const AttentionArgs& args, void* stream) {
    if (auto error = check_arguments(args); !error.empty()) throw std::invalid_argument(error);
    if (spec.head_dim != args.head_dim || spec.dtype != args.dtype || spec.causal != args.causal)
        throw std::invalid_argument("spec " + to_string(spec) + " does not match the arguments' head_dim, dtype or causal");
    const Backend& backend = state_->running_backend();
    CompiledKernel kernel = state_->provider.get(spec);

    LoadedKernel* loaded = nullptr;
    {
        std::lock_guard lock(state_->mutex);
        auto& slot = state_->loaded[{args.device, kernel.key}];
        if (!slot) {
            try {
                slot = backend.load(args.device, kernel.code, kernel.lowered_name);
            } catch (const std::runtime_error& rejected) {
                // The entry passed its checksum yet the loader refused it (say, a driver
                // update): compile it afresh once rather than failing forever.
                spdlog::warn("{}; recompiling {}", rejected.what(), to_string(spec));
                state_->provider.forget(kernel);
                kernel = state_->provider.get(spec);
                slot = backend.load(args.device, kernel.code, kernel.lowered_name);
            }
        }
        loaded = slot.get();
    }
    const KernelArguments arguments = make_kernel_arguments(args);
    if (auto error = loaded->launch(launch_shape(spec, args), &arguments, sizeof arguments, stream); !error.empty())
        throw std::runtime_error("launching " + to_string(spec) + ": " + error);
}

}  // namespace fajit
