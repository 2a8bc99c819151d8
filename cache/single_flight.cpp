#include "cache/single_flight.hpp"

#include <exception>

namespace fajit::cache {

SingleFlight::Result SingleFlight::run(const std::string& id, const std::function<Entry()>& produce) {
    std::promise<Entry> promise;
    std::shared_future<Entry> someone_elses;
    {
        std::lock_guard lock(mutex_);
        const auto [slot, first] = in_flight_.try_emplace(id);
        if (first) {
            slot->second = promise.get_future().share();
        } else {
            someone_elses = slot->second;
        }
    }
    if (someone_elses.valid()) return Result{someone_elses.get(), true};

    const auto forget = [&] {
        std::lock_guard lock(mutex_);
        in_flight_.erase(id);
    };
    try {
        Entry entry = produce();
        promise.set_value(entry);
        forget();
        return Result{std::move(entry), false};
    } catch (...) {
        promise.set_exception(std::current_exception());
        forget();
        throw;
    }
}

}  // namespace fajit::cache
