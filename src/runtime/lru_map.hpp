#pragma once
// A map that keeps its entries in the order they were last used, for caches with a bound:
// the owner removes the least recently used entry while it is over its bound.
#include <cstddef>
#include <list>
#include <map>
#include <utility>

namespace fajit {

template <class Key, class Value>
class LruMap {
public:
    using Entry = std::pair<const Key, Value>;

    // The value under key, now the most recently used; null when absent.
    Value* find(const Key& key) {
        const auto found = index_.find(key);
        if (found == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, found->second);
        return &found->second->second;
    }

    // Stores value under key, replacing any value there, as the most recently used.
    Value& insert(const Key& key, Value value) {
        erase(key);
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
        return order_.front().second;
    }

    void erase(const Key& key) {
        if (const auto found = index_.find(key); found != index_.end()) {
            order_.erase(found->second);
            index_.erase(found);
        }
    }

    // The least recently used entry; the map must not be empty.
    Entry& oldest() { return order_.back(); }

    // Removes the least recently used entry and hands it over; the map must not be empty.
    Entry take_oldest() {
        Entry entry = std::move(order_.back());
        index_.erase(entry.first);
        order_.pop_back();
        return entry;
    }

    std::size_t size() const { return order_.size(); }

private:
    std::list<Entry> order_;  // most recently used first
    std::map<Key, typename std::list<Entry>::iterator> index_;
};

}  // namespace fajit
