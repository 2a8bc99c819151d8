#pragma once
// Device time between two points of the default stream, by the backend's events: the
// launches in between are timed on the device, free of host launch overhead and clock noise.
#include <memory>

#include "backend/backend.hpp"

namespace fajit::testing {

class EventTimer {
public:
    // Throws std::runtime_error naming the failed call.
    EventTimer(const Backend&, int device);

    void start();
    // Waits for the stop event; milliseconds since start().
    float stop();

private:
    std::unique_ptr<DeviceEvent> start_;
    std::unique_ptr<DeviceEvent> stop_;
};

}  // namespace fajit::testing
