#pragma once

#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include "cache/entry.hpp"

namespace fajit::cache {

// Collapses concurrent requests for one id within this process into a single call of
// `produce`: the first caller runs it, callers arriving meanwhile wait and get a copy of its
// result, or its exception. Once the call finishes the id is forgotten, so a later request
// runs `produce` again (the disk cache answers it by then).
class SingleFlight {
public:
    struct Result {
        Entry entry;
        bool shared;  // true if another caller's produce supplied the entry
    };

    Result run(const std::string& id, const std::function<Entry()>& produce);

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_future<Entry>> in_flight_;
};

}  // namespace fajit::cache
