#include "dispatch/function_cache.hpp"

#include <algorithm>
#include <iterator>
#include <thread>

namespace fajit {
namespace {

constexpr std::size_t initial_capacity = 64;

// Spreads the packed key's few changing bits over the whole index (a Fibonacci hash).
std::size_t home_of(std::uint64_t key, std::size_t mask) {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

}  // namespace

FunctionCache::FunctionCache() { publish(std::make_unique<Table>(initial_capacity)); }

FunctionCache::~FunctionCache() = default;

std::size_t FunctionCache::shard_of_this_thread() noexcept {
    // Threads take the shards in turn, so up to reader_shards threads never share one.
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t shard = next.fetch_add(1, std::memory_order_relaxed) % reader_shards;
    return shard;
}

const ResolvedVariant* FunctionCache::probe(const Table& table, std::uint64_t key) noexcept {
    for (std::size_t index = home_of(key, table.mask);; index = (index + 1) & table.mask) {
        const Slot& slot = table.slots[index];
        // The value is published after the key, so a non-null value means the key is readable.
        const ResolvedVariant* value = slot.value.load(std::memory_order_acquire);
        if (!value) return nullptr;  // tables never fill, so every probe meets an empty slot
        if (slot.key.load(std::memory_order_relaxed) == key) return value;
    }
}

void FunctionCache::place(Table& table, std::uint64_t key, const ResolvedVariant* value) noexcept {
    std::size_t index = home_of(key, table.mask);
    while (table.slots[index].value.load(std::memory_order_relaxed)) index = (index + 1) & table.mask;
    table.slots[index].key.store(key, std::memory_order_relaxed);
    table.slots[index].value.store(value, std::memory_order_release);
}

void FunctionCache::publish(std::unique_ptr<Table> table) {
    tables_.push_back(std::move(table));
    current_.store(tables_.back().get(), std::memory_order_seq_cst);
}

const ResolvedVariant* FunctionCache::find(std::uint64_t key) const noexcept {
    return probe(*current_.load(std::memory_order_seq_cst), key);
}

const ResolvedVariant* FunctionCache::insert(std::uint64_t key, KernelSpec spec, LoadedKernel* kernel,
                                             int compute_units) {
    std::lock_guard lock(writer_);
    Table* table = tables_.back().get();
    if (const ResolvedVariant* existing = probe(*table, key)) return existing;

    variants_.push_back(std::unique_ptr<ResolvedVariant>(new ResolvedVariant{std::move(spec), kernel, compute_units}));
    const ResolvedVariant* value = variants_.back().get();
    if (2 * variants_.size() > table->mask + 1) {
        auto larger = std::make_unique<Table>(2 * (table->mask + 1));
        for (std::size_t index = 0; index <= table->mask; ++index)
            if (const auto* old = table->slots[index].value.load(std::memory_order_relaxed))
                place(*larger, table->slots[index].key.load(std::memory_order_relaxed), old);
        place(*larger, key, value);
        publish(std::move(larger));
        return value;
    }
    place(*table, key, value);
    return value;
}

// Why waiting works: a reader increments its count (seq_cst), then loads the table
// (seq_cst); remove() stores the new table (seq_cst), then loads each count (seq_cst). If
// the reader loaded the old table, its increment precedes the store in the single total
// order of these operations, so remove() sees the count raised until that reader is done.
void FunctionCache::wait_for_readers() const noexcept {
    for (const ReaderCount& shard : readers_)
        while (shard.count.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

void FunctionCache::remove(const LoadedKernel* kernel) {
    std::lock_guard lock(writer_);
    const auto removed_from = std::stable_partition(variants_.begin(), variants_.end(),
                                                    [&](const auto& variant) { return variant->kernel != kernel; });
    if (removed_from == variants_.end()) return;
    std::vector<std::unique_ptr<ResolvedVariant>> removed(std::make_move_iterator(removed_from),
                                                          std::make_move_iterator(variants_.end()));
    variants_.erase(removed_from, variants_.end());

    const Table& table = *tables_.back();
    auto rest = std::make_unique<Table>(table.mask + 1);
    for (std::size_t index = 0; index <= table.mask; ++index)
        if (const auto* value = table.slots[index].value.load(std::memory_order_relaxed);
            value && value->kernel != kernel)
            place(*rest, table.slots[index].key.load(std::memory_order_relaxed), value);
    publish(std::move(rest));

    wait_for_readers();
    // No reader holds an older table or a removed variant any more.
    tables_.erase(tables_.begin(), tables_.end() - 1);
}

bool FunctionCache::take_recent_use(const LoadedKernel* kernel) {
    std::lock_guard lock(writer_);
    bool used = false;
    for (const auto& variant : variants_)
        if (variant->kernel == kernel) used |= variant->used.exchange(false, std::memory_order_relaxed);
    return used;
}

}  // namespace fajit
