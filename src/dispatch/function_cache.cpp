#include "dispatch/function_cache.hpp"

namespace fajit {
namespace {

constexpr std::size_t initial_capacity = 64;

// Spreads the packed key's few changing bits over the whole index (a Fibonacci hash).
std::size_t home_of(std::uint64_t key, std::size_t mask) {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

}  // namespace

FunctionCache::FunctionCache() {
    tables_.push_back(std::make_unique<Table>(initial_capacity));
    current_.store(tables_.back().get(), std::memory_order_release);
}

FunctionCache::~FunctionCache() = default;

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

const ResolvedVariant* FunctionCache::find(std::uint64_t key) const noexcept {
    return probe(*current_.load(std::memory_order_acquire), key);
}

const ResolvedVariant* FunctionCache::insert(std::uint64_t key, ResolvedVariant variant) {
    std::lock_guard lock(writer_);
    Table* table = tables_.back().get();
    if (const ResolvedVariant* existing = probe(*table, key)) return existing;

    variants_.push_back(std::make_unique<ResolvedVariant>(std::move(variant)));
    const ResolvedVariant* value = variants_.back().get();
    if (2 * variants_.size() > table->mask + 1) {
        auto larger = std::make_unique<Table>(2 * (table->mask + 1));
        for (std::size_t index = 0; index <= table->mask; ++index)
            if (const auto* old = table->slots[index].value.load(std::memory_order_relaxed))
                place(*larger, table->slots[index].key.load(std::memory_order_relaxed), old);
        place(*larger, key, value);
        tables_.push_back(std::move(larger));
        current_.store(tables_.back().get(), std::memory_order_release);
        return value;
    }
    place(*table, key, value);
    return value;
}

}  // namespace fajit
