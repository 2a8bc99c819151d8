#pragma once
// The hot path's lookup from a dispatch key (device, shape class) to the kernel that runs
// it. Readers never lock: they load the current table and probe it. Writers (the first
// call of a key, and unloading a kernel) serialize on a mutex and publish a table or a
// slot's value with release ordering; a table half full is replaced by one twice its size.
//
// Removing entries (when the runtime unloads their kernel) needs to know that no reader
// still holds one. A reader therefore holds a Reader while it uses what find() returned:
// a count in one of reader_shards padded counters, the thread's own as long as there are
// no more threads than shards, so readers of different threads touch different cache
// lines. remove() publishes a table without the entries, then waits until every count has
// been seen at zero: a reader that came later cannot find them.
#include <array>
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
    LoadedKernel* kernel;  // owned by the runtime, which removes the entry before unloading it
    int compute_units;     // of the device, for the launch geometry
    // Set by the hot path when it runs the variant; take_recent_use() reads and clears it.
    mutable std::atomic<bool> used{false};

    void mark_used() const noexcept {
        // Read first: once set, the hot path only reads the flag's cache line.
        if (!used.load(std::memory_order_relaxed)) used.store(true, std::memory_order_relaxed);
    }
};

class FunctionCache {
public:
    // What find() returns stays valid while the calling thread holds a Reader.
    class Reader {
    public:
        explicit Reader(const FunctionCache& cache) noexcept : count_(cache.readers_[shard_of_this_thread()].count) {
            // Ordered before the table load in find(): see remove().
            count_.fetch_add(1, std::memory_order_seq_cst);
        }
        ~Reader() { count_.fetch_sub(1, std::memory_order_release); }
        Reader(const Reader&) = delete;
        Reader& operator=(const Reader&) = delete;

    private:
        std::atomic<int>& count_;
    };

    FunctionCache();
    ~FunctionCache();
    FunctionCache(const FunctionCache&) = delete;
    FunctionCache& operator=(const FunctionCache&) = delete;

    // Null when key is not there. Lock-free; safe beside insert() and remove(). Call it under
    // a Reader, or where remove() cannot run at the same time.
    const ResolvedVariant* find(std::uint64_t key) const noexcept;
    // Stores a variant under key unless one is there; returns the stored one.
    const ResolvedVariant* insert(std::uint64_t key, KernelSpec spec, LoadedKernel* kernel, int compute_units);
    // Removes every entry that runs kernel, then waits until no Reader can still hold one,
    // so the kernel can be unloaded. Never call it while holding a Reader.
    void remove(const LoadedKernel* kernel);
    // Whether the hot path ran kernel since the last call; clears the marks.
    bool take_recent_use(const LoadedKernel* kernel);

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
    static constexpr std::size_t reader_shards = 64;
    struct alignas(64) ReaderCount {
        std::atomic<int> count{0};
    };

    static std::size_t shard_of_this_thread() noexcept;
    static const ResolvedVariant* probe(const Table&, std::uint64_t key) noexcept;
    static void place(Table&, std::uint64_t key, const ResolvedVariant*) noexcept;
    void publish(std::unique_ptr<Table>);
    void wait_for_readers() const noexcept;

    std::atomic<const Table*> current_;
    mutable std::array<ReaderCount, reader_shards> readers_;
    std::mutex writer_;
    // The current table last; the older ones stay until remove() has seen every reader out.
    std::vector<std::unique_ptr<Table>> tables_;
    std::vector<std::unique_ptr<ResolvedVariant>> variants_;  // every value, in insertion order
};

}  // namespace fajit
