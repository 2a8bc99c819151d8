#pragma once
// GPU time between two points of the default stream, by CUDA events: the launches in
// between are timed on the device, free of host launch overhead and clock noise.
#include <string>

namespace fajit::testing {

class EventTimer {
public:
    // Throws std::runtime_error naming the missing driver entry point or failed call.
    EventTimer();
    ~EventTimer();
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;

    void start();
    // Waits for the stop event; milliseconds since start().
    float stop();

private:
    void* start_ = nullptr;
    void* stop_ = nullptr;
};

}  // namespace fajit::testing
