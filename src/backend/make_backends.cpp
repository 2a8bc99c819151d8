#include "backend/backend.hpp"
#if FAJIT_WITH_HIP
#include "backend/hip_backend.hpp"
#endif
#if FAJIT_WITH_CUDA
#include "backend/cuda_backend.hpp"
#endif

namespace fajit {

std::vector<std::unique_ptr<Backend>> make_backends() {
    std::vector<std::unique_ptr<Backend>> backends;
#if FAJIT_WITH_CUDA
    backends.push_back(make_cuda_backend());
#endif
#if FAJIT_WITH_HIP
    backends.push_back(make_hip_backend());
#endif
    return backends;
}

const Backend* running_backend(const std::vector<std::unique_ptr<Backend>>& backends, std::string& reasons) {
    reasons.clear();
    for (const auto& backend : backends) {
        const auto reason = backend->runtime_unavailable_reason();
        if (reason.empty()) return backend.get();
        reasons += (reasons.empty() ? "" : "; ") + std::string(backend->name()) + ": " + reason;
    }
    return nullptr;
}

}  // namespace fajit
