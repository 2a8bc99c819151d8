#include "support/event_timer.hpp"

namespace fajit::testing {

EventTimer::EventTimer(const Backend& backend, int device)
    : start_(backend.create_event(device)), stop_(backend.create_event(device)) {}

void EventTimer::start() { start_->record(nullptr); }

float EventTimer::stop() {
    stop_->record(nullptr);
    return stop_->milliseconds_since(*start_);
}

}  // namespace fajit::testing
