#pragma once
// Finds the code object for a spec: in memory, else on disk, else in the fleet cache when one
// is configured, else by compiling it (once per key, whatever the number of threads,
// processes or machines asking). Memory keeps the most recently used
// options.max_loaded_kernels of them.
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.hpp"
#include "cache/disk_cache.hpp"
#include "codegen/template_store.hpp"
#include "fajit/options.hpp"
#include "fajit/runtime.hpp"
#include "runtime/lru_map.hpp"

namespace fajit {

class KernelProvider {
public:
    KernelProvider(const Options&, const std::vector<std::unique_ptr<Backend>>& backends);

    CompiledKernel get(const KernelSpec&);
    std::string emit(const KernelSpec&) const;
    // Drops a kernel the device loader rejected, so the next get() compiles it afresh.
    void forget(const CompiledKernel&);
    // The store kernels are kept in, shared with what else the runtime keeps on disk.
    cache::DiskCache& disk_cache() { return disk_; }

private:
    const Backend& backend_for(const std::string& arch) const;

    TemplateStore templates_;
    std::vector<std::string> compile_options_;
    const std::vector<std::unique_ptr<Backend>>& backends_;
    cache::DiskCache disk_;
    std::size_t in_memory_bound_;
    std::mutex mutex_;
    LruMap<std::string, CompiledKernel> in_memory_;  // by cache key
};

}  // namespace fajit
