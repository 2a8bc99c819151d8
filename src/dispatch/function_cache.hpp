#pragma once
// The hot path's lookup from a dispatch key (device, shape class) to the kernel that runs
// it. Readers never lock: they load the current table with acquire ordering and probe it.
// Writers, one per first call of a key, serialize on a mutex, fill an empty slot and publish
// its value with release ordering, and replace the table with one twice the size when it is
// half full. A replaced table stays alive until the cache dies, since a reader may still be
// probing it; all replaced tables together are smaller than the current one.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.hpp"
#include "fajit/kernel_spec.hpp"

namespace fajit {

struct ResolvedVariant {
    KernelSpec spec;       // what runs, after any fallback
    LoadedKernel* kernel;  // owned by the runtime, which outlives the cache
    int compute_units;     // of the device, for the launch geometry
};

class FunctionCache {
public:
    FunctionCache();
    ~FunctionCache();
    FunctionCache(const FunctionCache&) = delete;
    FunctionCache& operator=(const FunctionCache&) = delete;

    // Null when key was never inserted. Lock-free; safe beside insert().
    const ResolvedVariant* find(std::uint64_t key) const noexcept;
    // Stores variant under key unless one is there; returns the stored one.
    const ResolvedVariant* insert(std::uint64_t key, ResolvedVariant variant);

private:
    struct Slot {
        std::atomic<std::uint64_t> key{0};
        std::atomic<const ResolvedVariant*> value{nullptr};  // null: empty slot
    };
    struct Table {
        explicit Table(std::size_t capacity) : mask(capacity - 1), slots(new Slot[capacity]) {}
        std::size_t mask;
        std::unique_ptr<Slot[]> slots;
    };

    static const ResolvedVariant* probe(const Table&, std::uint64_t key) noexcept;
    static void place(Table&, std::uint64_t key, const ResolvedVariant*) noexcept;

    std::atomic<const Table*> current_;
    std::mutex writer_;
    std::vector<std::unique_ptr<Table>> tables_;              // current and replaced
    std::vector<std::unique_ptr<ResolvedVariant>> variants_;  // every value, in insertion order
};

}  // namespace fajit
