#pragma once
// Variants that failed to compile or load, remembered so a process (and the next one)
// goes straight to the fallback instead of failing again. Each failure is kept in memory
// and as a failure record in the disk cache (cache/FORMAT.md), keyed by a hash of the spec,
// the compiler identity and the library version: a new compiler or a new fa-jit tries the
// variant afresh. `fa-jit clear` forgets them all. Only a verdict on the code goes to disk:
// a failure for another reason (the compiler out of memory) is this process's alone.
#include <map>
#include <optional>
#include <string>

#include "cache/disk_cache.hpp"
#include "fajit/kernel_spec.hpp"
#include "fajit/runtime.hpp"

namespace fajit {

struct VariantFailure {
    ErrorKind kind = ErrorKind::compile_failed;  // compile_failed or load_failed
    std::string summary;                         // the variant and the first lines of the log
    // The compiler or loader judged the code, which another process would repeat; false:
    // it failed for a reason that may pass, so the record stays in memory.
    bool verdict = true;
};

class FailedVariants {
public:
    // A disabled disk cache keeps failures in memory only.
    explicit FailedVariants(cache::DiskCache& disk);

    // How spec failed under compiler before, if it did.
    std::optional<VariantFailure> find(const KernelSpec& spec, const std::string& compiler);
    // Remembers a failure. A cache that cannot store it warns once (the disk cache does) and
    // is not asked again: the failure is still remembered in memory.
    void record(const KernelSpec& spec, const std::string& compiler, const VariantFailure&);

private:
    cache::DiskCache& disk_;
    bool disk_failed_ = false;
    std::map<std::string, VariantFailure> in_memory_;  // by the record's key, as hex
};

}  // namespace fajit
