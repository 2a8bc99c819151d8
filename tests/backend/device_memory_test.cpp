// Device memory, copies, fills and events through the Backend interface, which is all the
// GPU suites and tools use of a toolkit. Each check runs on the fake backend, and again on
// the device the GPU suites use; that half skips, saying why, where no device exists.
#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "backend/device_buffer.hpp"
#include "support/fake_backend.hpp"
#include "support/test_device.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

std::unique_ptr<Backend> fake_backend() { return make_fake_backend({}, std::make_shared<FakeBackendCounters>()); }

const Backend* device_backend() {
    if (auto reason = test_device_unavailable_reason(); !reason.empty()) {
        std::printf("skipped on a device: %s\n", reason.c_str());
        return nullptr;
    }
    return &test_backend();
}

void check_copies(const Backend& backend, int device) {
    std::vector<std::uint32_t> values(4096);
    std::iota(values.begin(), values.end(), 0x12340000u);
    DeviceBuffer buffer(backend, device, values.size() * sizeof(std::uint32_t));
    buffer.upload(values);
    CHECK(buffer.download<std::uint32_t>() == values);

    buffer.fill(0xa5);
    const auto bytes = buffer.download<unsigned char>();
    REQUIRE(bytes.size() == buffer.size());
    CHECK(std::count(bytes.begin(), bytes.end(), 0xa5) == static_cast<std::ptrdiff_t>(bytes.size()));

    // A part upload leaves the rest as it was.
    buffer.upload(std::vector<unsigned char>(16, 0x01));
    const auto after = buffer.download<unsigned char>();
    CHECK(after[15] == 0x01);
    CHECK(after[16] == 0xa5);

    CHECK_THROWS_AS(buffer.upload(std::vector<std::uint32_t>(values.size() + 1)), std::length_error);
}

// Time passes between two events recorded around work: 64 MiB filled on the device.
void check_events(const Backend& backend, int device) {
    DeviceBuffer work(backend, device, 64u << 20);
    const auto start = backend.create_event(device);
    const auto stop = backend.create_event(device);
    start->record(nullptr);
    work.fill(0x00);
    work.fill(0xff);
    stop->record(nullptr);
    const float milliseconds = stop->milliseconds_since(*start);
    MESSAGE(backend.name() << ": two 64 MiB fills took " << milliseconds << " ms");
    CHECK(milliseconds > 0.0f);
    CHECK(milliseconds < 10000.0f);
}

}  // namespace

TEST_CASE("a device buffer round-trips values, fills, and refuses an upload that does not fit") {
    check_copies(*fake_backend(), 0);
    if (const Backend* backend = device_backend()) check_copies(*backend, test_device);
}

TEST_CASE("two events time the work queued between them") {
    check_events(*fake_backend(), 0);
    if (const Backend* backend = device_backend()) check_events(*backend, test_device);
}

TEST_CASE("a buffer whose release fails logs the failure from its destructor instead of throwing") {
    FakeBackendConfig config;
    config.failing_releases = true;
    const auto backend = make_fake_backend(config, std::make_shared<FakeBackendCounters>());
    std::ostringstream log;
    const auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
    spdlog::default_logger()->sinks().push_back(sink);
    CHECK_NOTHROW(DeviceBuffer(*backend, 0, 64));
    spdlog::default_logger()->sinks().pop_back();
    CHECK(log.str().find("releasing a device buffer of 64 bytes: the fake runtime refuses to free") !=
          std::string::npos);
}

TEST_CASE("events of different backends cannot be compared") {
    if (const Backend* backend = device_backend()) {
        const auto fake = fake_backend();
        const auto device_event = backend->create_event(test_device);
        const auto fake_event = fake->create_event(0);
        device_event->record(nullptr);
        fake_event->record(nullptr);
        CHECK_THROWS_AS(device_event->milliseconds_since(*fake_event), std::invalid_argument);
        CHECK_THROWS_AS(fake_event->milliseconds_since(*device_event), std::invalid_argument);
    }
}
