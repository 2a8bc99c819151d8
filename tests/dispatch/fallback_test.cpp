// The runtime's dispatch on the fake backend: fallback on failed compiles and loads, the
// per-process and on-disk record of failures, strict mode, and what never reaches a device.
#include <doctest/doctest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

// Collects warnings from the library's log.
class WarningSink : public spdlog::sinks::base_sink<std::mutex> {
public:
    std::vector<std::string> warnings;

protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
        if (message.level == spdlog::level::warn) warnings.emplace_back(message.payload.data(), message.payload.size());
    }
    void flush_() override {}
};

struct CapturedWarnings {
    std::shared_ptr<WarningSink> sink = std::make_shared<WarningSink>();
    CapturedWarnings() { spdlog::default_logger()->sinks().push_back(sink); }
    ~CapturedWarnings() { spdlog::default_logger()->sinks().pop_back(); }
    std::size_t count() const { return sink->warnings.size(); }
    std::string last() const { return sink->warnings.empty() ? "" : sink->warnings.back(); }
};

struct TemporaryDirectory {
    std::filesystem::path path;
    TemporaryDirectory() {
        static int serial = 0;
        path = std::filesystem::temp_directory_path() /
               ("fa-jit-dispatch-test-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
        std::filesystem::remove_all(path);
    }
    ~TemporaryDirectory() { std::filesystem::remove_all(path); }
};

struct FakeRuntime {
    std::shared_ptr<FakeBackendCounters> counters = std::make_shared<FakeBackendCounters>();
    std::unique_ptr<Runtime> runtime;

    FakeRuntime(FakeBackendConfig config, Options options) {
        options.log_level = "warn";
        std::vector<std::unique_ptr<Backend>> backends;
        backends.push_back(make_fake_backend(std::move(config), counters));
        runtime = std::make_unique<Runtime>(std::move(options), std::move(backends));
    }
};

Options memory_only() {
    Options options;
    options.cache_disabled = true;
    return options;
}

Options cached_in(const std::filesystem::path& directory) {
    Options options;
    options.cache_dir = directory;
    return options;
}

FakeBackendConfig gfx1151(std::vector<std::string> failing_compiles = {}, std::vector<std::string> failing_loads = {}) {
    FakeBackendConfig config;
    config.arch = "gfx1151";
    config.failing_compiles = std::move(failing_compiles);
    config.failing_loads = std::move(failing_loads);
    return config;
}

AttentionArgs args_for(int len_q, DType dtype = DType::f16, int head_dim = 128) {
    alignas(16) static char memory[4][64];
    AttentionArgs args;
    args.q = memory[0];
    args.k = memory[1];
    args.v = memory[2];
    args.o = memory[3];
    args.dtype = dtype;
    args.batch = 1;
    args.heads_q = 8;
    args.heads_kv = 2;
    args.len_q = len_q;
    args.len_k = 4096;
    args.head_dim = head_dim;
    args.q_strides = args.o_strides = {8LL * len_q * head_dim, std::int64_t(len_q) * head_dim, head_dim};
    args.k_strides = args.v_strides = {2LL * 4096 * head_dim, 4096LL * head_dim, head_dim};
    args.scale = 0.088f;
    args.causal = CausalMode::bottom_right;
    return args;
}

}  // namespace

TEST_CASE("the selected variant is compiled and loaded once, then every call only launches") {
    FakeRuntime fake(gfx1151(), memory_only());
    const AttentionArgs args = args_for(2048);
    for (int i = 0; i < 100; ++i) fake.runtime->attention(args, nullptr);
    CHECK(fake.runtime->select(args).family == "wmma-gfx11");
    CHECK(fake.counters->compiles == 1);
    CHECK(fake.counters->loads == 1);
    CHECK(fake.counters->launches == 100);
}

TEST_CASE("a variant that fails to compile falls back to scalar with one warning naming it and its log") {
    CapturedWarnings warnings;
    FakeRuntime fake(gfx1151({"wmma-gfx11"}), memory_only());
    const AttentionArgs args = args_for(2048);
    for (int i = 0; i < 10; ++i) fake.runtime->attention(args, nullptr);
    CHECK(fake.runtime->select(args).family == "scalar");
    CHECK(fake.counters->launches == 10);
    CHECK(fake.counters->compiles == 2);  // the variant once, scalar once
    REQUIRE(warnings.count() == 1);
    CHECK(warnings.last().find("family=wmma-gfx11,d=128") != std::string::npos);
    CHECK(warnings.last().find("the fake compiler refuses this family") != std::string::npos);
    CHECK(warnings.last().find("running the fallback, scalar, instead") != std::string::npos);
}

namespace {

// Where the disk cache keeps the failure records of gfx1151 variants (cache/FORMAT.md).
std::vector<std::filesystem::path> failure_records_in(const std::filesystem::path& cache) {
    std::vector<std::filesystem::path> records;
    std::error_code missing;
    for (const auto& file : std::filesystem::directory_iterator(cache / "v1" / "gfx1151" / "failures", missing))
        records.push_back(file.path());
    return records;
}

}  // namespace

TEST_CASE("a failed variant is remembered on disk, keyed with the compiler: the next process skips it") {
    TemporaryDirectory cache;
    {
        FakeRuntime first(gfx1151({"wmma-gfx11"}), cached_in(cache.path));
        first.runtime->attention(args_for(2048), nullptr);
        CHECK(first.counters->compiles == 2);
    }
    const auto records = failure_records_in(cache.path);
    REQUIRE(records.size() == 1);

    CapturedWarnings warnings;
    FakeRuntime second(gfx1151(), cached_in(cache.path));  // this compiler would now succeed, but it is the same one
    second.runtime->attention(args_for(2048), nullptr);
    CHECK(second.counters->compiles == 0);  // no retry of the variant; scalar comes from the disk cache
    CHECK(second.runtime->select(args_for(2048)).family == "scalar");
    REQUIRE(warnings.count() == 1);
    CHECK(warnings.last().find("failed before") != std::string::npos);
    CHECK(warnings.last().find(records.front().string()) != std::string::npos);
}

TEST_CASE("a damaged failure record is dropped with a warning and the variant is tried again") {
    TemporaryDirectory cache;
    {
        FakeRuntime first(gfx1151({"wmma-gfx11"}), cached_in(cache.path));
        first.runtime->attention(args_for(2048), nullptr);
    }
    const auto records = failure_records_in(cache.path);
    REQUIRE(records.size() == 1);
    std::filesystem::resize_file(records.front(), std::filesystem::file_size(records.front()) - 1);

    CapturedWarnings warnings;
    FakeRuntime second(gfx1151(), cached_in(cache.path));
    second.runtime->attention(args_for(2048), nullptr);
    CHECK(second.counters->compiles == 1);  // the variant, which this compiler accepts; scalar was on disk
    CHECK(second.runtime->select(args_for(2048)).family == "wmma-gfx11");
    REQUIRE(warnings.count() == 1);
    CHECK(warnings.last().find("removing corrupt failure record") != std::string::npos);
    CHECK(failure_records_in(cache.path).empty());
}

TEST_CASE("a variant the loader rejects falls back too, after one fresh compile") {
    CapturedWarnings warnings;
    FakeRuntime fake(gfx1151({}, {"fa_matrix_core"}), memory_only());
    fake.runtime->attention(args_for(2048), nullptr);
    CHECK(fake.runtime->select(args_for(2048)).family == "scalar");
    CHECK(fake.counters->loads == 3);  // variant, variant recompiled, scalar
    CHECK(warnings.last().find("loading family=wmma-gfx11") != std::string::npos);
}

TEST_CASE("a load that fails for another reason than the code fails the call and keeps the entry; the next call loads") {
    TemporaryDirectory cache;
    FakeBackendConfig config = gfx1151();
    config.out_of_memory_loads = 1;
    FakeRuntime fake(config, cached_in(cache.path));
    CHECK_THROWS_WITH_AS(fake.runtime->attention(args_for(2048), nullptr),
                         doctest::Contains("the fake loader is out of memory"), std::runtime_error);
    CHECK(fake.counters->launches == 0);
    CHECK(fake.counters->compiles == 1);  // the entry was kept, not compiled again
    CHECK(failure_records_in(cache.path).empty());

    fake.runtime->attention(args_for(2048), nullptr);
    CHECK(fake.runtime->select(args_for(2048)).family == "wmma-gfx11");
    CHECK(fake.counters->compiles == 1);
    CHECK(fake.counters->loads == 2);
    CHECK(fake.counters->launches == 1);
}

TEST_CASE("a compile that fails for another reason than the source falls back in this process only") {
    TemporaryDirectory cache;
    {
        CapturedWarnings warnings;
        FakeBackendConfig config = gfx1151();
        config.out_of_memory_compiles = {"wmma-gfx11"};
        FakeRuntime first(config, cached_in(cache.path));
        first.runtime->attention(args_for(2048), nullptr);
        first.runtime->attention(args_for(2048), nullptr);
        CHECK(first.runtime->select(args_for(2048)).family == "scalar");
        CHECK(first.counters->compiles == 2);  // the variant once, scalar once
        REQUIRE(warnings.count() == 1);
        CHECK(warnings.last().find("out of memory") != std::string::npos);
        CHECK(warnings.last().find("for this process only") != std::string::npos);
    }
    CHECK(failure_records_in(cache.path).empty());
    FakeRuntime second(gfx1151(), cached_in(cache.path));
    second.runtime->attention(args_for(2048), nullptr);
    CHECK(second.runtime->select(args_for(2048)).family == "wmma-gfx11");
}

TEST_CASE("FAJIT_STRICT turns each kind of fallback into an error, but not FAJIT_FORCE_FALLBACK") {
    Options strict = memory_only();
    strict.strict = true;
    {
        FakeRuntime fake(gfx1151({"wmma-gfx11"}), strict);
        try {
            fake.runtime->attention(args_for(2048), nullptr);
            FAIL("expected an error");
        } catch (const Error& error) {
            CHECK(error.kind() == ErrorKind::compile_failed);
            CHECK(std::string(error.what()).find("FAJIT_STRICT=1 refuses the fallback to scalar") != std::string::npos);
            CHECK(std::string(error.what()).find("the fake compiler refuses") != std::string::npos);
        }
        CHECK(fake.counters->launches == 0);
    }
    {
        FakeRuntime fake(gfx1151({}, {"fa_matrix_core"}), strict);
        try {
            fake.runtime->attention(args_for(2048), nullptr);
            FAIL("expected an error");
        } catch (const Error& error) {
            CHECK(error.kind() == ErrorKind::load_failed);
        }
    }
    {
        FakeRuntime fake(gfx1151(), strict);
        try {
            fake.runtime->attention(args_for(2048, DType::f32), nullptr);
            FAIL("expected an error");
        } catch (const Error& error) {
            CHECK(error.kind() == ErrorKind::unsupported);
            CHECK(std::string(error.what()).find("dtype=f32") != std::string::npos);
        }
        CHECK(fake.counters->launches == 0);
    }
    strict.force_fallback = true;
    FakeRuntime forced(gfx1151(), strict);
    forced.runtime->attention(args_for(2048), nullptr);
    CHECK(forced.runtime->select(args_for(2048)).family == "scalar");
    CHECK(forced.counters->launches == 1);
}

TEST_CASE("FAJIT_FAMILY=wmma-gfx11 selects the emulated family on an NVIDIA device") {
    Options options = memory_only();
    options.family = "wmma-gfx11";
    FakeRuntime fake(FakeBackendConfig{}, options);
    fake.runtime->attention(args_for(2048), nullptr);
    const KernelSpec spec = fake.runtime->select(args_for(2048));
    CHECK(spec.family == "wmma-gfx11");
    CHECK(spec.arch == "sm_90a");
}

TEST_CASE("malformed arguments, a missing device and an unknown device ordinal never launch") {
    FakeRuntime fake(gfx1151(), memory_only());
    AttentionArgs bad = args_for(16);
    bad.heads_kv = 3;
    CHECK_THROWS_WITH_AS(fake.runtime->attention(bad, nullptr), doctest::Contains("heads_q=8"), std::invalid_argument);
    AttentionArgs elsewhere = args_for(16);
    elsewhere.device = 1;
    CHECK_THROWS_WITH_AS(fake.runtime->attention(elsewhere, nullptr), doctest::Contains("device=1"),
                         std::invalid_argument);
    CHECK(fake.counters->compiles == 0);
    CHECK(fake.counters->launches == 0);

    FakeBackendConfig none;
    none.device_count = 0;
    FakeRuntime empty(none, memory_only());
    try {
        empty.runtime->attention(args_for(16), nullptr);
        FAIL("expected an error");
    } catch (const Error& error) {
        CHECK(error.kind() == ErrorKind::no_device);
        CHECK(std::string(error.what()).find("the fake backend has no device") != std::string::npos);
    }
}

TEST_CASE("an unwritable cache directory still falls back, remembering the failure in memory") {
    CapturedWarnings warnings;
    FakeRuntime fake(gfx1151({"wmma-gfx11"}), cached_in("/proc/fa-jit-cannot-write-here"));
    fake.runtime->attention(args_for(2048), nullptr);
    fake.runtime->attention(args_for(2048), nullptr);
    CHECK(fake.runtime->select(args_for(2048)).family == "scalar");
    CHECK(fake.counters->launches == 2);
}

TEST_CASE("many threads over many shape classes: every call launches, each variant is prepared once") {
    FakeRuntime fake(gfx1151(), memory_only());
    constexpr int threads = 8, calls = 3000;
    const int lengths[] = {1, 3, 16, 64, 2048};
    const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int i = 0; i < calls; ++i)
                fake.runtime->attention(args_for(lengths[(i + t) % 5], dtypes[(i / 5 + t) % 3]), nullptr);
        });
    for (auto& thread : pool) thread.join();
    CHECK(fake.counters->launches == threads * calls);
    // With 4 query heads per KV head, 1 and 3 query rows are decode tiles of 4 and 16 rows,
    // 16 and 64 share wmma-gfx11's small class, 2048 is large: 4 variants each for f16 and
    // bf16. f32 runs scalar (decode-split lacks it), whose decode tiles differ from its
    // others': 2 variants.
    CHECK(fake.counters->compiles == 10);
    CHECK(fake.counters->loads == 10);
}
