#include "support/gpu_test_setup.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "families/registry.hpp"
#include "support/scratch_directory.hpp"
#include "support/test_device.hpp"

namespace fajit::testing {

Options gpu_test_options(bool debug_counters) {
    // The kernel cache of one test process: a suite never finds what another suite, or an
    // earlier run, compiled. Constructed before the runtimes that use it, so it is removed
    // after them.
    static const ScratchDirectory cache("fa-jit-gpu-test-cache");
    Options options = Options::from_environment();
    options.cache_dir = cache.path;
    options.log_level = "warn";
    options.debug_counters = debug_counters;
    return options;
}

Runtime& gpu_test_runtime() {
    static Runtime instance(gpu_test_options(false));
    return instance;
}

std::string gpu_test_arch() { return gpu_test_runtime().devices().at(0).arch; }

bool skip_without_device() {
    std::string reason = test_device_unavailable_reason();
    if (reason.empty() && gpu_test_runtime().devices().empty()) reason = "the library sees no device";
    if (reason.empty()) return false;
    std::printf("skipped: %s\n", reason.c_str());
    return true;
}

KernelSpec scalar_spec(const CaseShape& shape, float margin) {
    KernelSpec spec;
    spec.family = "scalar";
    spec.arch = gpu_test_arch();
    spec = with_family_defaults(spec);
    spec.head_dim = shape.head_dim;
    spec.dtype = shape.dtype;
    spec.causal = shape.causal;
    spec.rescale_margin = margin;
    return spec;
}

int prepare_all(Runtime& runtime, const std::vector<KernelSpec>& specs) {
    std::atomic<std::size_t> next{0};
    std::atomic<int> failures{0};
    const auto work = [&] {
        for (std::size_t i = next++; i < specs.size(); i = next++) {
            try {
                runtime.prepare(specs[i]);
            } catch (const CompileError& error) {
                std::printf("compile failed: %s\n%s\n", error.what(), error.log().c_str());
                ++failures;
            }
        }
    };
    const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& thread : pool) thread.join();
    return failures;
}

std::vector<std::string> families_on(const std::string& arch, FamilyKind kind) {
    std::vector<std::string> families;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        // The decode families are the ones that refuse every shape but decode.
        if ((family.refuses_shape != nullptr) != (kind == FamilyKind::decode)) continue;
        if (family.compiles_for(arch))
            families.emplace_back(family.name);
        else
            std::printf("%s skipped: it does not compile for %s\n", std::string(family.name).c_str(), arch.c_str());
    }
    return families;
}

}  // namespace fajit::testing
