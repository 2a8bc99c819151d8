// The fa-jit command-line tool, driven as operators and scripts drive it: real processes,
// real cache directories, exit codes and --json output.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "cache/disk_cache.hpp"
#include "cli_process.hpp"
#include "codegen/isa_report.hpp"
#include "support/compile_support.hpp"
#include "support/scratch_directory.hpp"
#if FAJIT_TEST_REDIS
#include "support/redis_server.hpp"
#endif

namespace {

namespace fs = std::filesystem;
using fajit::cli_test::CliRun;
using nlohmann::json;

constexpr int exit_usage = 1;
constexpr int exit_failed = 2;

// Every directory a test makes lives under one root, removed when the tests end.
fs::path fresh_directory(const std::string& name) {
    static fajit::testing::ScratchDirectory root("fa-jit-cli-test");
    static int counter = 0;
    return root.path / (name + "-" + std::to_string(counter++));
}

CliRun fa_jit(const std::vector<std::string>& args, const std::map<std::string, std::string>& environment = {}) {
    static const fs::path io = fresh_directory("io");
    return fajit::cli_test::run_cli(args, io, environment);
}

std::vector<std::string> with_cache(std::vector<std::string> args, const fs::path& cache) {
    args.push_back("--cache-dir");
    args.push_back(cache.string());
    return args;
}

json json_of(const CliRun& run) {
    INFO("stdout: " << run.out);
    INFO("stderr: " << run.err);
    json parsed;
    REQUIRE_NOTHROW(parsed = json::parse(run.out));
    return parsed;
}

// The two targets the compiling tests warm, from the compilers this build has: AMD ones
// where HIPRTC is present (the fastest to compile), else NVIDIA ones where NVRTC is.
struct WarmTargets {
    std::string first, second;
    std::string first_only_family;  // a family the first target runs and the second lacks
};

// Empty, after printing why each pair is skipped, when this build compiles for neither.
const std::optional<WarmTargets>& warm_targets() {
    static const std::optional<WarmTargets> chosen = []() -> std::optional<WarmTargets> {
        for (const WarmTargets& pair :
             {WarmTargets{"gfx1151", "gfx942", "wmma-gfx11"}, WarmTargets{"sm_80", "sm_75", "mma-sm80"}})
            if (fajit::testing::compiler_for(pair.first) && fajit::testing::compiler_for(pair.second)) return pair;
        return std::nullopt;
    }();
    if (!chosen) MESSAGE("no compiler for either pair of targets here: skipping the compiling part");
    return chosen;
}

// The llama-3 preset (head dim 128) on both targets, in f16/bf16 x no mask/bottom-right.
std::vector<std::string> warm_preset_args(const WarmTargets& targets) {
    return {"warm", "--preset", "llama-3", "--arch", targets.first, "--arch", targets.second, "--jobs", "2", "--json"};
}

struct WarmedCache {
    fs::path root;
    CliRun first, second;
    // What the warm planned (its --dry-run), counted per arch and per family.
    std::size_t variants = 0;
    std::map<std::string, std::size_t> per_arch, per_family;
};

void count_planned(WarmedCache& cache, const json& plan) {
    cache.variants = plan["total"].get<std::size_t>();
    const std::regex fields(R"(^family=([^,]+),.*,arch=(.+)$)");
    for (const auto& variant : plan["variants"]) {
        const std::string text = variant.get<std::string>();
        std::smatch match;
        REQUIRE_MESSAGE(std::regex_match(text, match, fields), text);
        ++cache.per_family[match[1]];
        ++cache.per_arch[match[2]];
    }
}

// Warmed once into a fresh directory, then warmed again; tests that change a cache use copies.
// Only called once warm_targets() found a pair.
const WarmedCache& warmed_cache() {
    static const WarmedCache warmed = [] {
        const std::vector<std::string> args = warm_preset_args(*warm_targets());
        WarmedCache cache;
        cache.root = fresh_directory("warmed");
        std::vector<std::string> dry_run = args;
        dry_run.push_back("--dry-run");
        count_planned(cache, json_of(fa_jit(with_cache(dry_run, fresh_directory("plan-only")))));
        cache.first = fa_jit(with_cache(args, cache.root));
        cache.second = fa_jit(with_cache(args, cache.root));
        return cache;
    }();
    return warmed;
}

fs::path copy_of_warmed_cache() {
    const fs::path copy = fresh_directory("copy");
    fs::copy(warmed_cache().root, copy, fs::copy_options::recursive);
    return copy;
}

std::vector<fs::path> entry_files(const fs::path& arch_directory) {
    std::vector<fs::path> files;
    for (const auto& item : fs::recursive_directory_iterator(arch_directory))
        if (item.is_regular_file() && item.path().filename().string().size() == 32) files.push_back(item.path());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST_CASE("every subcommand answers --help with exit 0") {
    for (std::vector<std::string> command : std::vector<std::vector<std::string>>{{"warm"},
                                                                                  {"ls"},
                                                                                  {"stats"},
                                                                                  {"verify"},
                                                                                  {"prune"},
                                                                                  {"clear"},
                                                                                  {"emit"},
                                                                                  {"compile"},
                                                                                  {"devices"},
                                                                                  {"bench"},
                                                                                  {"remote", "ls"},
                                                                                  {"remote", "stats"},
                                                                                  {"remote", "clear"},
                                                                                  {"pack"},
                                                                                  {"unpack"}}) {
        INFO(command.front() << " " << command.back());
        command.push_back("--help");
        const CliRun run = fa_jit(command);
        INFO(run.err);
        CHECK(run.exit_code == 0);
        CHECK(run.out.find("--cache-dir") != std::string::npos);
        CHECK(run.out.find("--json") != std::string::npos);
    }
    const CliRun top = fa_jit({"--help"});
    CHECK(top.exit_code == 0);
    CHECK(top.out.find("warm") != std::string::npos);
}

TEST_CASE("errors of use exit 1 with a message naming the field") {
    const fs::path cache = fresh_directory("usage");
    SUBCASE("a bad spec") {
        const CliRun run = fa_jit(with_cache({"compile", "family=scalar,d=12,dtype=f16,arch=gfx1151"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("d=12:") != std::string::npos);
    }
    SUBCASE("a bad head dim to warm") {
        const CliRun run = fa_jit(with_cache({"warm", "--head-dim", "12", "--arch", "gfx1151"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("d=12:") != std::string::npos);
    }
    SUBCASE("an unknown dtype") {
        const CliRun run =
            fa_jit(with_cache({"warm", "--preset", "llama-3", "--dtype", "f8", "--arch", "gfx1151"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("dtype=f8:") != std::string::npos);
    }
    SUBCASE("a family the arch does not support") {
        const CliRun run =
            fa_jit(with_cache({"warm", "--preset", "llama-3", "--family", "wmma-gfx11", "--arch", "gfx942"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("arch=gfx942:") != std::string::npos);
    }
    SUBCASE("a target name fa-jit does not compile for, before any compile (one aborted the AMD compiler)") {
        for (const std::string arch : {"gfx9999", "gfx1151:foo+", "gfx90", "gfx942:xnack-:sramecc+", "sm_9x"}) {
            CAPTURE(arch);
            const CliRun run = fa_jit(with_cache({"compile", "family=scalar,d=64,dtype=f16", "--arch", arch}, cache));
            CHECK(run.exit_code == exit_usage);
            CHECK(run.err.find("arch=" + arch + ": ") != std::string::npos);
        }
        const CliRun warm =
            fa_jit(with_cache({"warm", "--arch", "gfx1151,gfx942:sramec+", "--head-dim", "64", "-j", "2"}, cache));
        CHECK(warm.exit_code == exit_usage);
        CHECK(warm.err.find("arch=gfx942:sramec+: gfx942 takes the target features sramecc, xnack") !=
              std::string::npos);
    }
    SUBCASE("an unknown option") {
        CHECK(fa_jit({"ls", "--no-such-option"}).exit_code == exit_usage);
        CHECK(fa_jit({}).exit_code == exit_usage);
    }
    SUBCASE("an unknown command or option before any command is named, with the commands there are") {
        for (const auto& [args, named] : {std::pair<std::vector<std::string>, std::string>{{"frob"}, "command 'frob'"},
                                          {{"frob", "--json"}, "command 'frob'"},
                                          {{"--frob"}, "option '--frob'"}}) {
            const CliRun run = fa_jit(args);
            CHECK(run.exit_code == exit_usage);
            CHECK(run.err.find("fa-jit: unknown " + named + "; the commands are warm, ls, ") != std::string::npos);
        }
    }
    SUBCASE("a bench shape with mismatched heads, before any device is touched") {
        const CliRun run = fa_jit(with_cache({"bench", "--heads-q", "32", "--heads-kv", "3"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("heads_q=32") != std::string::npos);
    }
    SUBCASE("bench counts below 1 (a division by zero) and a dtype it cannot fill, before any device is touched") {
        for (const auto& [option, value] : {std::pair<std::string, std::string>{"--reps", "0"},
                                            {"--fallback-reps", "0"},
                                            {"--warmup", "-1"},
                                            {"--dtype", "e4m3"}}) {
            CAPTURE(option);
            const CliRun run = fa_jit(with_cache({"bench", option, value}, cache));
            CHECK(run.exit_code == exit_usage);
            CHECK(run.err.find(option + ": ") != std::string::npos);
            CHECK(run.err.find(value) != std::string::npos);
        }
    }
    SUBCASE("a malformed duration") {
        const CliRun run = fa_jit(with_cache({"prune", "--older-than", "7 days"}, cache));
        CHECK(run.exit_code == exit_usage);
        CHECK(run.err.find("--older-than") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(cache / "v1"));
}

TEST_CASE("warm expands presets, lists and ranges into valid variants") {
    const fs::path cache = fresh_directory("plan");
    SUBCASE("a preset on two archs gives each arch its own family") {
        const json plan = json_of(fa_jit(
            with_cache({"warm", "--preset", "gemma-2", "--arch", "gfx1151,gfx942", "--dry-run", "--json"}, cache)));
        // scalar on both, wmma-gfx11 on gfx1151 and mfma-gfx9 on gfx942, each in f16/bf16 x
        // no mask/bottom-right, for the global and the windowed layers, all soft-capped.
        CHECK(plan["total"] == 32);
        int windowed = 0;
        for (const auto& spec : plan["variants"]) {
            const std::string text = spec;
            CHECK(text.find(",d=256,") != std::string::npos);
            CHECK(text.find(",softcap=1,") != std::string::npos);
            CHECK(text.find(",sinks=1") == std::string::npos);
            windowed += text.find(",window=1,") != std::string::npos;
            CHECK_FALSE((text.find("wmma-gfx11") != std::string::npos && text.ends_with("gfx942")));
            CHECK_FALSE((text.find("mfma-gfx9") != std::string::npos && text.ends_with("gfx1151")));
        }
        CHECK(windowed == 16);
    }
    SUBCASE("features from flags and a preset's: gpt-oss has sinks everywhere and windowed layers") {
        const json plan = json_of(fa_jit(with_cache({"warm", "--preset", "gpt-oss", "--arch", "sm_90a", "--dtype",
                                                     "bf16", "--causal", "bottom-right", "-n", "--json"},
                                                    cache)));
        // wgmma-sm90 and the fallback, plain and windowed.
        CHECK(plan["total"] == 4);
        for (const auto& spec : plan["variants"]) CHECK(std::string(spec).find(",sinks=1,") != std::string::npos);
        const json capped =
            json_of(fa_jit(with_cache({"warm", "--head-dim", "128", "--family", "mma-sm80", "--arch", "sm_80",
                                       "--dtype", "f16", "--causal", "none", "--softcap", "--window", "-n", "--json"},
                                      cache)));
        REQUIRE(capped["total"] == 2);
        CHECK(std::string(capped["variants"][0]).find(",softcap=1,") != std::string::npos);
        CHECK(std::string(capped["variants"][1]).find(",window=1,softcap=1,") != std::string::npos);
    }
    SUBCASE("a preset with decode and one page size: the dispatcher's variants for each shape, at most 24") {
        const json plan = json_of(fa_jit(with_cache({"warm", "--preset", "llama-3", "--arch", "gfx1151", "--decode",
                                                     "--page-size", "16", "--dry-run", "--json"},
                                                    cache)));
        // {wmma-gfx11, scalar} prefill and decode-split decode, each dense and paged, in
        // f16/bf16 x no mask/bottom-right.
        CHECK(plan["total"] == 24);
        int decode = 0, paged = 0;
        for (const auto& spec : plan["variants"]) {
            const std::string text = spec;
            // llama-3's GQA group of 4 packs one decode token's heads into 4 tile rows.
            if (text.starts_with("family=decode-split,")) decode += text.find(",bq=4,") != std::string::npos;
            paged += text.find(",kv=paged,page=16,") != std::string::npos;
        }
        CHECK(decode == 8);
        CHECK(paged == 12);
        const CliRun bad = fa_jit(
            with_cache({"warm", "--preset", "llama-3", "--arch", "gfx1151", "--page-size", "24", "--dry-run"}, cache));
        CHECK(bad.exit_code == exit_usage);
        CHECK(bad.err.find("page=24") != std::string::npos);
    }
    SUBCASE("e4m3 inputs: O's dtype from --out-dtype, the margin the runtime selects") {
        const json plan = json_of(fa_jit(with_cache({"warm", "--head-dim", "128", "--arch", "sm_90a", "--dtype", "e4m3",
                                                     "--out-dtype", "f16", "--causal", "none", "-n", "--json"},
                                                    cache)));
        // wgmma-sm90 and the fallback, each with O in f16 and e4m3's margin of 6.
        REQUIRE(plan["total"] == 2);
        CHECK(std::string(plan["variants"][0]).starts_with("family=wgmma-sm90,d=128,dtype=e4m3,out=f16,"));
        CHECK(std::string(plan["variants"][1]).starts_with("family=scalar,d=128,dtype=e4m3,out=f16,"));
        for (const auto& spec : plan["variants"]) CHECK(std::string(spec).find(",margin=6,") != std::string::npos);
        const CliRun bad = fa_jit(with_cache(
            {"warm", "--head-dim", "128", "--arch", "sm_90a", "--dtype", "e4m3", "--out-dtype", "f32", "-n"}, cache));
        CHECK(bad.exit_code == exit_usage);
        CHECK(bad.err.find("out-dtype=f32") != std::string::npos);
    }
    SUBCASE("a head dim range") {
        const json plan = json_of(fa_jit(with_cache({"warm", "--head-dim", "64-128:32", "--family", "scalar", "--dtype",
                                                     "f16", "--causal", "none", "--arch", "gfx1151", "-n", "--json"},
                                                    cache)));
        REQUIRE(plan["total"] == 3);
        CHECK(plan["variants"][0].get<std::string>().starts_with("family=scalar,d=64,"));
        CHECK(plan["variants"][2].get<std::string>().starts_with("family=scalar,d=128,"));
    }
    SUBCASE("a manifest of a spec and a sweep") {
        const fs::path manifest = cache / "manifest.json";
        fs::create_directories(cache);
        std::ofstream(manifest) << R"({"variants": [
            "family=scalar,d=64,dtype=f16,causal=bottom-right",
            {"preset": "phi-2", "family": "scalar", "dtype": "bf16", "causal": ["none"], "arch": "gfx942"}]})";
        const json plan = json_of(
            fa_jit(with_cache({"warm", "--manifest", manifest.string(), "--arch", "gfx1151", "-n", "--json"}, cache)));
        REQUIRE(plan["total"] == 2);
        CHECK(plan["variants"][0] ==
              "family=scalar,d=64,dtype=f16,bq=4,bk=64,waves=4,margin=0,causal=bottom-right,"
              "arch=gfx1151");
        CHECK(plan["variants"][1] ==
              "family=scalar,d=80,dtype=bf16,bq=4,bk=128,waves=4,margin=10,causal=none,"
              "arch=gfx942");

        std::ofstream(manifest) << R"({"variants": ["family=scalar,d=64,dtype=f16", {"head_dim": 13}]})";
        const CliRun bad =
            fa_jit(with_cache({"warm", "--manifest", manifest.string(), "--arch", "gfx1151", "-n"}, cache));
        CHECK(bad.exit_code == exit_usage);
        CHECK(bad.err.find("variants[1]: d=13:") != std::string::npos);

        std::ofstream(manifest) << R"({"variants": [{"head_dim": 64, "family": "scalar", "dtype": "f16",
            "causal": "none", "sinks": true, "softcap": true, "window": true}]})";
        const json featured = json_of(
            fa_jit(with_cache({"warm", "--manifest", manifest.string(), "--arch", "gfx1151", "-n", "--json"}, cache)));
        REQUIRE(featured["total"] == 2);
        CHECK(featured["variants"][0].get<std::string>().ends_with(",causal=none,softcap=1,sinks=1,arch=gfx1151"));
        CHECK(featured["variants"][1].get<std::string>().ends_with(",window=1,softcap=1,sinks=1,arch=gfx1151"));
        std::ofstream(manifest) << R"({"variants": [{"head_dim": 64, "window": "yes"}]})";
        const CliRun not_boolean =
            fa_jit(with_cache({"warm", "--manifest", manifest.string(), "--arch", "gfx1151", "-n"}, cache));
        CHECK(not_boolean.exit_code == exit_usage);
        CHECK(not_boolean.err.find("window: expected true or false") != std::string::npos);

        // Values that used to crash, truncate, wrap or pass for success.
        const std::pair<const char*, std::string> refused[] = {
            {R"({"variants": []})", manifest.string() + ": \"variants\" is empty: nothing to warm"},
            {R"({"variants": [{"head_dim": 64, "preset": []}]})",
             manifest.string() + ": variants[0]: preset: an empty array names no value"},
            {R"({"variants": [{"head_dim": 64, "family": []}]})", "variants[0]: family: an empty array names no value"},
            {R"({"variants": [{"head_dim": 64, "preset": ["phi-2", "llama-3"]}]})",
             "variants[0]: preset: expected one value, not 2"},
            {R"({"variants": [{"head_dim": 64, "page_size": 16.7}]})",
             "variants[0]: page_size: expected an integer, not 16.7"},
            {R"({"variants": [{"head_dim": 64, "page_size": [16, 32.5]}]})",
             "variants[0]: page_size: expected an integer, not 32.5"},
            {R"({"variants": [{"head_dim": 64, "block_k": 1e20}]})", "variants[0]: block_k: expected an integer, not"},
            {R"({"variants": [{"head_dim": 64, "block_k": 4294967360}]})",
             "variants[0]: block_k: 4294967360 is out of range"},
            {R"({"variants": [{"head_dim": 64, "waves": -4294967296}]})",
             "variants[0]: waves: -4294967296 is out of range"},
        };
        for (const auto& [text, expected] : refused) {
            const std::string manifest_text = text;
            CAPTURE(manifest_text);
            std::ofstream(manifest) << manifest_text;
            const CliRun run =
                fa_jit(with_cache({"warm", "--manifest", manifest.string(), "--arch", "gfx1151", "-n"}, cache));
            CHECK(run.exit_code == exit_usage);
            CHECK_MESSAGE(run.err.find(expected) != std::string::npos, run.err);
        }
    }
}

TEST_CASE("warm a preset for two targets, then again: everything already cached, and faster") {
    if (!warm_targets()) return;
    const WarmedCache& warmed = warmed_cache();
    INFO("first warm: " << warmed.first.err);
    REQUIRE(warmed.first.exit_code == 0);
    const json first = json_of(warmed.first);
    const json second = json_of(warmed.second);
    // Both targets have the scalar family and the first one at least one more.
    CHECK(warmed.per_arch.size() == 2);
    CHECK(warmed.per_family.size() >= 2);
    CHECK(first["compiled"] == warmed.variants);
    CHECK(first["cached"] == 0);
    CHECK(first["failed"] == 0);
    CHECK(second["compiled"] == 0);
    CHECK(second["cached"] == warmed.variants);
    CHECK(second["failed"] == 0);
    CHECK(warmed.second.exit_code == 0);
    MESSAGE("warm of " << warmed.variants << " variants for " << warm_targets()->first << " and "
                       << warm_targets()->second << ", 2 jobs: " << first["wall_seconds"].get<double>()
                       << " s compiling, " << second["wall_seconds"].get<double>() << " s from the cache");
    CHECK(second["wall_seconds"].get<double>() < first["wall_seconds"].get<double>());
    CHECK(warmed.second.seconds < warmed.first.seconds);
    // The first warm hashed the compiler libraries for the cache keys and remembered the hashes.
    CHECK(fs::is_regular_file(warmed.root / "v1" / "file-fingerprints"));

    const std::string& second_arch = warm_targets()->second;
    const CliRun quiet =
        fa_jit(with_cache({"warm", "--preset", "llama-3", "--arch", second_arch, "-q"}, copy_of_warmed_cache()));
    CHECK(quiet.exit_code == 0);
    CHECK(quiet.err.empty());
    INFO(quiet.out);
    CHECK(std::regex_search(quiet.out,
                            std::regex("already cached +" + std::to_string(warmed.per_arch.at(second_arch)) + "\\b")));
}

namespace {

// One scalar variant per head dim given, for gfx1151: quick to compile.
// Only called once warm_targets() found a pair.
std::vector<std::string> warm_scalar_args(const std::vector<std::string>& head_dims, const std::string& jobs = "1") {
    std::vector<std::string> args = {
        "warm",   "--family", "scalar", "--dtype", "f16", "--causal", "none", "--arch", warm_targets()->first,
        "--jobs", jobs,       "--json"};
    for (const std::string& head_dim : head_dims) {
        args.push_back("--head-dim");
        args.push_back(head_dim);
    }
    return args;
}

// The environment that makes directory refuse writes with errno_name (see storage_fault_shim.c).
std::map<std::string, std::string> refusing_writes_under(const fs::path& directory, const std::string& errno_name) {
    return {{"LD_PRELOAD", FAJIT_STORAGE_FAULT_SHIM},
            {"FAJIT_TEST_REFUSE_UNDER", directory.string()},
            {"FAJIT_TEST_REFUSE_ERRNO", errno_name}};
}

// A warm whose second variant could not be stored: it exits 2, and says why per variant.
void check_one_not_stored(const CliRun& run, const std::string& reason) {
    INFO("stderr: " << run.err);
    CHECK(run.exit_code == exit_failed);
    const json report = json_of(run);
    CHECK(report["cached"] == 1);
    CHECK(report["compiled"] == 0);
    CHECK(report["not_stored"] == 1);
    CHECK(report["failed"] == 0);
    CHECK(report["not_stored_reasons"][reason] == 1);
    REQUIRE(report["variants"].size() == 2);
    CHECK(report["variants"][0]["outcome"] == "cached");
    CHECK(report["variants"][1]["outcome"] == "not_stored");
    CHECK(report["variants"][1]["reason"] == reason);
    CHECK(run.err.find("not stored: 1 variant, " + reason) != std::string::npos);
}

}  // namespace

TEST_CASE("warm into a cache path that is a regular file stores nothing, says so and exits 2") {
    if (!warm_targets()) return;
    const fs::path file = fresh_directory("regular-file");
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "not a directory";
    const CliRun run = fa_jit(with_cache(warm_scalar_args({"64"}), file));
    INFO("stderr: " << run.err);
    CHECK(run.exit_code == exit_failed);
    const json report = json_of(run);
    CHECK(report["compiled"] == 0);
    CHECK(report["not_stored"] == 1);
    CHECK(report["variants"][0]["reason"] == "not a directory");
    CHECK(report["variants"][0]["error"] == "Not a directory");
    CHECK(fs::is_regular_file(file));

    std::vector<std::string> text_args = warm_scalar_args({"64"});
    std::erase(text_args, "--json");
    const CliRun text = fa_jit(with_cache(text_args, file));
    CHECK(text.exit_code == exit_failed);
    CHECK(text.err.find("not stored: 1 variant, not a directory (Not a directory), e.g. family=scalar,d=64,") !=
          std::string::npos);
    CHECK(text.out.find("not a directory 1") != std::string::npos);
}

TEST_CASE("warm into a read-only cache keeps what it holds and reports the rest as not stored") {
    if (!warm_targets()) return;
    const fs::path cache = fresh_directory("read-only");
    REQUIRE(fa_jit(with_cache(warm_scalar_args({"64"}), cache)).exit_code == 0);
    check_one_not_stored(
        fa_jit(with_cache(warm_scalar_args({"64", "72"}), cache), refusing_writes_under(cache, "EROFS")), "read-only");
    CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, cache))).size() == 1);
}

TEST_CASE("warm into a full cache reports what it could not store, and leaves no partial files") {
    if (!warm_targets()) return;
    const fs::path cache = fresh_directory("full");
    REQUIRE(fa_jit(with_cache(warm_scalar_args({"64"}), cache)).exit_code == 0);
    check_one_not_stored(
        fa_jit(with_cache(warm_scalar_args({"64", "72"}), cache), refusing_writes_under(cache, "ENOSPC")), "no space");
    for (const auto& item : fs::recursive_directory_iterator(cache))
        CHECK(item.path().filename().string().find(".tmp.") == std::string::npos);
    // Once there is room again, the same warm completes.
    CHECK(fa_jit(with_cache(warm_scalar_args({"64", "72"}), cache)).exit_code == 0);
}

TEST_CASE("warm beyond the cache's size limit reports the evicted variants as missing") {
    if (!warm_targets()) return;
    const fs::path measure = fresh_directory("measure");
    REQUIRE(fa_jit(with_cache(warm_scalar_args({"64", "72"}), measure)).exit_code == 0);
    std::uint64_t smallest = UINT64_MAX, largest = 0;
    for (const auto& entry : json_of(fa_jit(with_cache({"ls", "--json"}, measure)))) {
        smallest = std::min(smallest, entry["size"].get<std::uint64_t>());
        largest = std::max(largest, entry["size"].get<std::uint64_t>());
    }
    // Room for either entry alone, never for both, with half the smaller entry to spare either
    // way: a header records its compile's time and log, so a variant compiled again can come
    // out some bytes larger or smaller than the one measured here.
    const std::string limit = std::to_string(largest + smallest / 2);
    // With parallel jobs the two publishes overlap, and each must still count the other.
    for (const std::string jobs : {"1", "8"}) {
        const fs::path cache = fresh_directory("small");
        const CliRun run =
            fa_jit(with_cache(warm_scalar_args({"64", "72"}, jobs), cache), {{"FAJIT_CACHE_MAX_SIZE", limit}});
        INFO("--jobs " << jobs << ", stderr: " << run.err);
        CHECK(run.exit_code == exit_failed);
        const json report = json_of(run);
        CHECK(report["compiled"] == 1);
        CHECK(report["not_stored"] == 1);
        CHECK(report["not_stored_reasons"]["missing"] == 1);
        CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, cache))).size() == 1);
    }
}

TEST_CASE("ls and stats agree with what was warmed") {
    if (!warm_targets()) return;
    const WarmedCache& warmed = warmed_cache();
    const fs::path cache = warmed.root;
    const json entries = json_of(fa_jit(with_cache({"ls", "--json"}, cache)));
    const json stats = json_of(fa_jit(with_cache({"stats", "--json"}, cache)));

    std::set<std::string> warmed_specs, listed_specs;
    const json warm_report = json_of(warmed_cache().first);
    for (const auto& variant : warm_report["variants"]) warmed_specs.insert(variant["spec"].get<std::string>());
    std::uint64_t listed_bytes = 0;
    for (const auto& entry : entries) {
        listed_specs.insert(entry["spec"].get<std::string>());
        listed_bytes += entry["size"].get<std::uint64_t>();
        CHECK(entry["spec"].get<std::string>().ends_with("arch=" + entry["arch"].get<std::string>()));
    }
    CHECK(listed_specs.size() == warmed.variants);
    CHECK(listed_specs == warmed_specs);
    CHECK(stats["entries"] == entries.size());
    CHECK(stats["bytes"] == listed_bytes);
    for (const auto& [arch, count] : warmed.per_arch) CHECK(stats["per_arch"][arch]["entries"] == count);
    CHECK(stats["counters"]["compiles"] == warmed.variants);
    CHECK(stats["counters"]["hits"] == warmed.variants);  // the second warm

    const std::string& family = warm_targets()->first_only_family;
    const json family_only = json_of(fa_jit(with_cache({"ls", "--json", "--family", family}, cache)));
    CHECK(family_only.size() == warmed.per_family.at(family));
    const std::string& second_arch = warm_targets()->second;
    const json second_only = json_of(fa_jit(with_cache({"ls", "--json", "--arch", second_arch}, cache)));
    CHECK(second_only.size() == warmed.per_arch.at(second_arch));
}

TEST_CASE("verify finds a corrupted entry, exits 2, and --fix removes it") {
    if (!warm_targets()) return;
    const WarmedCache& warmed = warmed_cache();
    const fs::path cache = copy_of_warmed_cache();
    const std::string& first_arch = warm_targets()->first;
    const auto first_arch_entries = entry_files(cache / "v1" / first_arch);
    REQUIRE(first_arch_entries.size() == warmed.per_arch.at(first_arch));
    const fs::path victim = first_arch_entries.front();
    {
        std::fstream file(victim, std::ios::in | std::ios::out | std::ios::binary);
        file.seekg(-1, std::ios::end);
        const char last = static_cast<char>(file.get());
        file.seekp(-1, std::ios::end);
        file.put(static_cast<char>(last ^ 0x5a));
    }

    const CliRun found = fa_jit(with_cache({"verify", "--json"}, cache));
    CHECK(found.exit_code == exit_failed);
    const json report = json_of(found);
    CHECK(report["checked"] == warmed.variants);
    REQUIRE(report["bad"].size() == 1);
    CHECK(report["bad"][0]["path"] == victim.string());
    CHECK(fs::exists(victim));

    const CliRun fixed = fa_jit(with_cache({"verify", "--fix"}, cache));
    CHECK(fixed.exit_code == 0);
    CHECK_FALSE(fs::exists(victim));
    CHECK(fa_jit(with_cache({"verify"}, cache)).exit_code == 0);
    const json stats = json_of(fa_jit(with_cache({"stats", "--json"}, cache)));
    CHECK(stats["entries"] == warmed.variants - 1);
    CHECK(stats["counters"]["corrupt_entries"] == 1);
}

TEST_CASE("prune to a size limit leaves at most that much; clear leaves nothing") {
    if (!warm_targets()) return;
    const fs::path cache = copy_of_warmed_cache();
    const std::uint64_t before = json_of(fa_jit(with_cache({"stats", "--json"}, cache)))["bytes"];
    const std::uint64_t limit = before / 2;

    const json pruned = json_of(fa_jit(with_cache({"prune", "--max-size", std::to_string(limit), "--json"}, cache)));
    const json after = json_of(fa_jit(with_cache({"stats", "--json"}, cache)));
    CHECK(after["bytes"].get<std::uint64_t>() <= limit);
    CHECK(after["entries"].get<std::uint64_t>() > 0);
    CHECK(pruned["removed_entries"].get<std::uint64_t>() + after["entries"].get<std::uint64_t>() ==
          warmed_cache().variants);

    const CliRun cleared = fa_jit(with_cache({"clear", "--json"}, cache));
    CHECK(cleared.exit_code == 0);
    CHECK(json_of(cleared)["removed_entries"] == after["entries"]);
    CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, cache))).empty());
}

TEST_CASE("ls, stats and verify show failure records, verify --fix drops a damaged one, clear the rest") {
    const fs::path cache = fresh_directory("failures");
    const auto record = [&](const std::string& arch, const std::string& family) {
        const std::string spec = "family=" + family + ",d=128,dtype=f16,arch=" + arch;
        // What the library records when a variant fails to compile.
        fajit::cache::DiskCacheConfig config;
        config.root = cache;
        fajit::cache::DiskCache(config).record_failure(
            arch, fajit::cache::KeyBuilder().add("spec", spec).finish(),
            {{"spec", spec}, {"family", family}, {"kind", "compile_failed"}, {"summary", "rejected: " + spec}});
        return spec;
    };
    const std::string wmma = record("gfx1151", "wmma-gfx11");
    const std::string scalar = record("gfx942", "scalar");

    const json listed = json_of(fa_jit(with_cache({"ls", "--json"}, cache)));
    REQUIRE(listed.size() == 2);
    CHECK(listed[0]["kind"] == "failure");
    CHECK(listed[0]["spec"] == wmma);
    CHECK(listed[0]["error"] == "rejected: " + wmma);
    CHECK(listed[1]["spec"] == scalar);
    const json filtered = json_of(fa_jit(with_cache({"ls", "--json", "--family", "scalar"}, cache)));
    REQUIRE(filtered.size() == 1);
    CHECK(filtered[0]["arch"] == "gfx942");
    const CliRun text = fa_jit(with_cache({"ls"}, cache));
    CHECK(text.out.find("0 entries") != std::string::npos);
    CHECK(text.out.find(wmma) != std::string::npos);
    CHECK(text.out.find("2 failure records") != std::string::npos);

    const json stats = json_of(fa_jit(with_cache({"stats", "--json"}, cache)));
    CHECK(stats["entries"] == 0);
    CHECK(stats["failure_records"] == 2);
    CHECK(stats["per_arch"]["gfx1151"]["failure_records"] == 1);

    const json sound = json_of(fa_jit(with_cache({"verify", "--json"}, cache)));
    CHECK(sound["checked_failures"] == 2);
    CHECK(sound["bad"].empty());
    const fs::path damaged = listed[1]["path"].get<std::string>();
    fs::resize_file(damaged, 20);
    const CliRun found = fa_jit(with_cache({"verify", "--json"}, cache));
    CHECK(found.exit_code == exit_failed);
    const json report = json_of(found);
    REQUIRE(report["bad"].size() == 1);
    CHECK(report["bad"][0]["kind"] == "failure");
    CHECK(report["bad"][0]["path"] == damaged.string());
    CHECK(fa_jit(with_cache({"verify", "--fix"}, cache)).exit_code == 0);
    CHECK_FALSE(fs::exists(damaged));
    CHECK(json_of(fa_jit(with_cache({"stats", "--json"}, cache)))["counters"]["corrupt_entries"] == 1);

    const json cleared = json_of(fa_jit(with_cache({"clear", "--json"}, cache)));
    CHECK(cleared["removed_failure_records"] == 1);
    CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, cache))).empty());
}

TEST_CASE("the cache directory comes from FAJIT_CACHE_DIR when --cache-dir is absent") {
    if (!warm_targets()) return;
    const json entries = json_of(fa_jit({"ls", "--json"}, {{"FAJIT_CACHE_DIR", warmed_cache().root.string()}}));
    CHECK(entries.size() == warmed_cache().variants);
}

TEST_CASE("ls, stats, verify, prune, clear and pack refuse a cache directory that is missing or not a directory") {
    const fs::path missing = fresh_directory("mistyped") / "cache";
    const fs::path file = fresh_directory("file-not-directory");
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "not a cache\n";
    const fs::path archive = fresh_directory("no-archive") / "kernels.tar.zst";
    fs::create_directories(archive.parent_path());
    for (const auto& [cache, problem] :
         {std::pair{missing, std::string(" does not exist")}, {file, std::string(" is not a directory")}})
        for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
                 {"ls"}, {"stats"}, {"verify"}, {"prune"}, {"clear"}, {"pack", archive.string()}}) {
            CAPTURE(command.front());
            CAPTURE(cache);
            const CliRun run = fa_jit(with_cache(command, cache));
            CHECK(run.exit_code == exit_usage);
            CHECK(run.err.find("cache directory " + cache.string() + problem) != std::string::npos);
        }
    CHECK_FALSE(fs::exists(missing.parent_path()));
    CHECK(fs::is_empty(archive.parent_path()));
}

TEST_CASE("devices reports every backend's view as JSON") {
    const json devices = json_of(fa_jit({"devices", "--json"}));
    CHECK(devices["devices"].is_array());
    CHECK(devices["unavailable"].is_array());
    CHECK(devices["devices"].size() + devices["unavailable"].size() > 0);
}

namespace {

// Whether --isa can report on arch here: its compiler, and on AMD LLVM's readelf and
// objdump; prints why not.
bool can_report_cost(const std::string& arch) {
    if (!fajit::testing::compiler_for(arch)) return false;
    if (arch.starts_with("gfx") &&
        (fajit::find_llvm_tool("llvm-readelf").empty() || fajit::find_llvm_tool("llvm-objdump").empty())) {
        MESSAGE("skipped ", arch, ": no llvm-readelf and llvm-objdump here");
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("compile --isa reports what the code costs, compiled and again from the cache") {
    // The scalar kernel stages one f32 query row per wave: 4 waves x 64 dims x 4 bytes of
    // static shared memory, which each vendor's report must find in the code it describes.
    const fs::path cache = fresh_directory("isa");
    for (const std::string arch : {"sm_80", "gfx1151"}) {
        CAPTURE(arch);
        if (!can_report_cost(arch)) continue;
        const bool nvidia = arch.starts_with("sm_");
        const std::vector<std::string> args =
            with_cache({"compile", "--isa", "--json", "family=scalar,d=64,dtype=f16,waves=4,arch=" + arch}, cache);
        const json compiled = json_of(fa_jit(args));
        const json again = json_of(fa_jit(args));
        CHECK(compiled["compiled_now"] == true);
        CHECK(again["compiled_now"] == false);
        const char* report = nvidia ? "ptxas" : "isa";
        REQUIRE_MESSAGE(compiled.contains(report), compiled.dump(2));
        CHECK(again[report] == compiled[report]);  // read from the entry's log or code, not the compile
        const json& cost = compiled[report];
        CHECK(cost["kernel"] == compiled["kernel"]);
        if (nvidia) {
            CHECK(cost["target"] == arch);
            CHECK(cost["registers"].get<int>() > 0);
            CHECK(cost["shared_bytes"] == 1024);
            CHECK(cost["spill_store_bytes"] == 0);
        } else {
            CHECK(cost["processor"] == arch);
            CHECK(cost["vgprs"].get<int>() > 0);
            CHECK(cost["lds_bytes"] == 1024);
            CHECK(cost["vgpr_spills"] == 0);
        }
    }
}

TEST_CASE("warm --isa reports each variant's cost and lists those that spill") {
    const fs::path cache = fresh_directory("warm-isa");
    for (const std::string arch : {"sm_80", "gfx1151"}) {
        CAPTURE(arch);
        if (!can_report_cost(arch)) continue;
        const bool nvidia = arch.starts_with("sm_");
        // The dispatcher's tiles (which spill nowhere), and the same shapes with 64-key steps
        // pinned, which may: what warm counts and lists must agree with each variant's report.
        for (const bool pinned : {false, true}) {
            CAPTURE(pinned);
            std::vector<std::string> args = {"warm",       "--isa",   "--json",      "-q",       "--arch",
                                             arch,         "--dtype", "bf16",        "--causal", "bottom-right",
                                             "--head-dim", "64",      "--page-size", "64"};
            if (pinned) args.insert(args.end(), {"--family", nvidia ? "mma-sm80" : "wmma-gfx11", "--block-k", "64"});
            const CliRun run = fa_jit(with_cache(args, cache));
            CHECK(run.exit_code == 0);
            const json report = json_of(run);
            std::size_t spilling = 0;
            for (const json& variant : report["variants"]) {
                const std::string spec = variant["spec"];
                REQUIRE_MESSAGE(variant.contains(nvidia ? "ptxas" : "isa"), variant.dump(2));
                const json& cost = variant[nvidia ? "ptxas" : "isa"];
                const bool spills =
                    nvidia ? cost["spill_store_bytes"].get<int>() > 0 : cost["vgpr_spills"].get<int>() > 0;
                spilling += spills;
                CHECK_MESSAGE(spills == (run.err.find("spills: " + spec + "\n") != std::string::npos), spec, run.err);
                if (!pinned) CHECK_MESSAGE(!spills, spec);
            }
            CHECK(report["spilling"] == spilling);
        }
    }
}

TEST_CASE("bench times the selected variant against scalar on a GPU, and says why not without one") {
    const fs::path cache = fresh_directory("bench");
    const CliRun run = fa_jit(with_cache({"bench", "--json", "--heads-q", "4", "--heads-kv", "2", "--len-q", "128",
                                          "--len-k", "256", "--head-dim", "64", "--reps", "3", "--fallback-reps", "1"},
                                         cache));
    INFO(run.err);
    if (run.exit_code == exit_failed) {
        CHECK(run.err.find("no GPU device") != std::string::npos);
        MESSAGE("no GPU here: bench reported " << run.err);
        return;
    }
    REQUIRE(run.exit_code == 0);
    const json report = json::parse(run.out);
    CHECK(report["selected"]["ms"].get<double>() > 0.0);
    CHECK(report["fallback"]["spec"].get<std::string>().find("family=scalar") == 0);
    CHECK(report["speedup"].get<double>() > 0.0);
}

namespace {

// Every file under root whose name marks an unfinished write (the pack's or an entry's).
std::vector<fs::path> temp_files_under(const fs::path& root) {
    std::vector<fs::path> found;
    if (!fs::exists(root)) return found;
    for (const auto& item : fs::recursive_directory_iterator(root))
        if (item.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(item.path());
    return found;
}

bool fleet_cache_built() {
    if (!FAJIT_TEST_FLEET_CACHE) MESSAGE("skipped: this build has no fleet cache (FAJIT_FLEET_CACHE off)");
    return FAJIT_TEST_FLEET_CACHE;
}

}  // namespace

TEST_CASE("pack, then unpack into an empty directory: verify is clean and warm compiles nothing") {
    if (!warm_targets() || !fleet_cache_built()) return;
    const WarmedCache& warmed = warmed_cache();
    const fs::path archive = fresh_directory("pack") / "kernels.tar.zst";
    fs::create_directories(archive.parent_path());
    const CliRun packed = fa_jit(with_cache({"pack", archive.string(), "--json"}, warmed.root));
    INFO("pack: " << packed.err);
    REQUIRE(packed.exit_code == 0);
    CHECK(json_of(packed)["entries"] == warmed.variants);
    CHECK(temp_files_under(archive.parent_path()).empty());

    const fs::path image = fresh_directory("unpacked");
    const CliRun unpacked = fa_jit(with_cache({"unpack", archive.string(), "--json"}, image));
    INFO("unpack: " << unpacked.err);
    REQUIRE(unpacked.exit_code == 0);
    CHECK(json_of(unpacked)["entries"] == warmed.variants);
    const CliRun verified = fa_jit(with_cache({"verify", "--json"}, image));
    CHECK(verified.exit_code == 0);
    CHECK(json_of(verified)["checked"] == warmed.variants);
    const json warm = json_of(fa_jit(with_cache(warm_preset_args(*warm_targets()), image)));
    CHECK(warm["compiled"] == 0);
    CHECK(warm["cached"] == warmed.variants);

    // Filtered packs hold their part only.
    const std::string& second_arch = warm_targets()->second;
    const fs::path one_arch = archive.parent_path() / "one-arch.tar.zst";
    CHECK(json_of(fa_jit(with_cache({"pack", one_arch.string(), "--arch", second_arch, "--json"},
                                    warmed.root)))["entries"] == warmed.per_arch.at(second_arch));
    const std::string& family = warm_targets()->first_only_family;
    const fs::path one_family = archive.parent_path() / "one-family.tar.zst";
    CHECK(json_of(fa_jit(with_cache({"pack", one_family.string(), "--family", family, "--json"},
                                    warmed.root)))["entries"] == warmed.per_family.at(family));
    const fs::path family_image = fresh_directory("unpacked-family");
    CHECK(fa_jit(with_cache({"unpack", one_family.string()}, family_image)).exit_code == 0);
    CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, family_image))).size() == warmed.per_family.at(family));
    const CliRun bad_family = fa_jit(with_cache({"pack", one_family.string(), "--family", "no-such"}, warmed.root));
    CHECK(bad_family.exit_code == exit_usage);
    CHECK(bad_family.err.find("--family=no-such") != std::string::npos);
}

TEST_CASE("pack writes no archive when no entry passes its filters") {
    if (!fleet_cache_built()) return;
    const fs::path work = fresh_directory("nothing-to-pack");
    const fs::path empty_cache = work / "cache";
    fs::create_directories(empty_cache);
    const fs::path archive = work / "kernels.tar.zst";
    const CliRun empty = fa_jit(with_cache({"pack", archive.string()}, empty_cache));
    CHECK(empty.exit_code == exit_failed);
    CHECK(empty.err.find("nothing to pack: the cache holds no entries; no archive was written") != std::string::npos);
    if (warm_targets()) {
        const CliRun unmatched = fa_jit(with_cache({"pack", archive.string(), "--arch", "foo"}, warmed_cache().root));
        CHECK(unmatched.exit_code == exit_failed);
        CHECK(unmatched.err.find("none of the cache's " + std::to_string(warmed_cache().variants) +
                                 " entries matches arch foo") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(archive));
    CHECK(temp_files_under(work).empty());
}

TEST_CASE("a damaged archive is refused with a clear message and stores nothing") {
    if (!warm_targets() || !fleet_cache_built()) return;
    const fs::path work = fresh_directory("damaged-pack");
    fs::create_directories(work);
    const fs::path archive = work / "kernels.tar.zst";
    REQUIRE(fa_jit(with_cache({"pack", archive.string()}, warmed_cache().root)).exit_code == 0);
    const auto bytes = [&] {
        std::ifstream in(archive, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    const auto damaged = [&](const std::string& name, std::string content) {
        const fs::path path = work / name;
        std::ofstream(path, std::ios::binary) << content;
        return path;
    };
    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x20;
    for (const fs::path& bad : {damaged("flipped", flipped), damaged("truncated", bytes.substr(0, bytes.size() / 2)),
                                damaged("not-an-archive", "just text\n")}) {
        CAPTURE(bad.filename().string());
        const fs::path image = fresh_directory("refused");
        fs::create_directories(image);
        const CliRun run = fa_jit(with_cache({"unpack", bad.string()}, image));
        CHECK(run.exit_code == exit_failed);
        CHECK(run.err.find("refused " + bad.string()) != std::string::npos);
        CHECK(run.err.find("nothing was stored") != std::string::npos);
        CHECK(json_of(fa_jit(with_cache({"ls", "--json"}, image))).empty());
        CHECK(temp_files_under(image).empty());
    }
}

namespace {

// One member of a hand-written tar. With pax_path, a pax extended header names it instead of
// `name`, as libarchive reads it.
struct TarMember {
    std::string name;
    std::string content;
    std::optional<std::string> pax_path{};
};

std::string tar_header(const std::string& name, std::size_t size, char type) {
    std::string header(512, '\0');
    const auto put = [&](std::size_t offset, const std::string& text) { header.replace(offset, text.size(), text); };
    const auto octal = [](std::uint64_t value, int digits) {
        char text[24];
        std::snprintf(text, sizeof text, "%0*llo", digits, static_cast<unsigned long long>(value));
        return std::string(text);
    };
    put(0, name);
    put(100, "0000644");
    put(108, "0000000");
    put(116, "0000000");
    put(124, octal(size, 11));
    put(136, octal(0, 11));
    put(148, "        ");  // the checksum counts its own field as spaces
    header[156] = type;
    put(257, std::string("ustar", 6));  // with its NUL
    put(263, "00");
    unsigned checksum = 0;
    for (const char c : header) checksum += static_cast<unsigned char>(c);
    put(148, octal(checksum, 6) + std::string("\0 ", 2));
    return header;
}

std::string padded_to_blocks(std::string data) {
    data.resize((data.size() + 511) / 512 * 512, '\0');
    return data;
}

// An uncompressed tar (unpack reads any of libarchive's filters, none included) holding what
// fa-jit pack never writes.
void write_tar(const fs::path& path, const std::vector<TarMember>& members) {
    std::string tar;
    for (const TarMember& member : members) {
        if (member.pax_path) {
            // "<length> path=<name>\n", where the length counts its own digits.
            const std::string rest = " path=" + *member.pax_path + "\n";
            std::size_t length = rest.size();
            while (std::to_string(length).size() + rest.size() != length)
                length = std::to_string(length).size() + rest.size();
            const std::string record = std::to_string(length) + rest;
            tar += tar_header("PaxHeader", record.size(), 'x') + padded_to_blocks(record);
        }
        tar += tar_header(member.name, member.content.size(), '0') + padded_to_blocks(member.content);
    }
    tar += std::string(1024, '\0');
    std::ofstream(path, std::ios::binary) << tar;
}

}  // namespace

TEST_CASE("an archive with a mistyped manifest field, an unreadable name, a huge or misfiled entry is refused") {
    if (!fleet_cache_built()) return;
    const fs::path work = fresh_directory("malformed-pack");
    fs::create_directories(work);
    const std::string key(32, 'a');
    const std::string member = "entries/gfx1151/" + key;
    const auto entry_for_arch = [](const std::string& arch) {
        const auto bytes = fajit::cache::encode_entry({{{"arch", arch}, {"lowered_name", "k"}}, {std::byte{1}}});
        return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    };
    const std::string entry = entry_for_arch("gfx1151");
    const std::string misfiled = entry_for_arch("gfx942");  // listed under gfx1151
    const json item = {{"arch", "gfx1151"}, {"key", key}, {"bytes", entry.size()}};
    const json manifest = {{"format", "fa-jit-pack"}, {"version", 1}, {"entry_format_version", 1}, {"entries", {item}}};
    const auto unpack = [&](const std::string& name, const json& manifest_text, const TarMember& entry_member) {
        const fs::path archive = work / (name + ".tar");
        write_tar(archive, {{"manifest.json", manifest_text.dump()}, entry_member});
        const fs::path image = fresh_directory("unpacked-" + name);
        const CliRun run = fa_jit(with_cache({"unpack", archive.string()}, image));
        // A refused archive may leave no cache directory at all, which ls refuses.
        const std::size_t stored = fs::exists(image) ? json_of(fa_jit(with_cache({"ls", "--json"}, image))).size() : 0;
        return std::pair{run, stored};
    };

    // The hand-written tar itself is sound: what follows is refused for the one thing changed.
    const auto [sound, stored] = unpack("sound", manifest, {member, entry});
    INFO("sound: " << sound.err);
    REQUIRE(sound.exit_code == 0);
    CHECK(stored == 1);

    const auto with = [&](const std::string& field, const json& value) {
        json changed = manifest;
        changed[field] = value;
        return changed;
    };
    const auto with_item = [&](const std::string& field, const json& value) {
        json changed = manifest;
        changed["entries"][0][field] = value;
        return changed;
    };
    struct Refusal {
        std::string name;
        json manifest;
        TarMember entry;
        std::string says;
    };
    for (const Refusal& refusal : std::vector<Refusal>{
             {"format-number", with("format", 3), {member, entry}, "manifest's format must be a string, not 3"},
             {"version-text", with("version", "1"), {member, entry}, "manifest's version must be"},
             {"entry-version-negative", with("entry_format_version", -1), {member, entry}, "entry_format_version must"},
             {"entries-object",
              with("entries", json::object()),
              {member, entry},
              "manifest's entries must be an array"},
             {"item-number", with("entries", {7}), {member, entry}, "manifest's entries[0] must be an object"},
             {"arch-number", with_item("arch", 5), {member, entry}, "entries[0].arch must be a string"},
             {"key-null", with_item("key", nullptr), {member, entry}, "entries[0].key must be a string"},
             {"bytes-fraction", with_item("bytes", 1.5), {member, entry}, "entries[0].bytes must be"},
             {"bytes-huge",
              with_item("bytes", 1ull << 50),
              {member, entry},
              "entries[0].bytes, 1125899906842624, is more"},
             // libarchive 3.7 gives such a name raw, which is then not listed; older ones give none.
             {"unconvertible-name", manifest, {member, entry, "entries/\xff"}, "refused"},
             {"other-arch", with_item("bytes", misfiled.size()), {member, misfiled}, "its metadata names \"gfx942\""},
         }) {
        CAPTURE(refusal.name);
        const auto [run, stored_after] = unpack(refusal.name, refusal.manifest, refusal.entry);
        CAPTURE(run.err);
        CHECK(run.exit_code == exit_failed);
        CHECK(run.err.find("refused") != std::string::npos);
        CHECK(run.err.find(refusal.says) != std::string::npos);
        CHECK(stored_after == 0);
    }
}

#if FAJIT_TEST_REDIS
TEST_CASE("warm --remote fills the store, a fresh machine's warm through it compiles nothing; remote ls/stats/clear") {
    if (!warm_targets()) return;
    const WarmedCache& warmed = warmed_cache();
    fajit::testing::RedisServer server(fresh_directory("redis"));
    const std::map<std::string, std::string> remote = {{"FAJIT_REMOTE_CACHE", server.url()}};

    const CliRun no_remote = fa_jit(
        with_cache({"warm", "--remote", "--preset", "llama-3", "--arch", "gfx942"}, fresh_directory("no-remote")),
        {{"FAJIT_REMOTE_CACHE", ""}});
    CHECK(no_remote.exit_code == exit_usage);
    CHECK(no_remote.err.find("FAJIT_REMOTE_CACHE") != std::string::npos);

    // The variants are found locally, and pushed.
    std::vector<std::string> push_args = warm_preset_args(*warm_targets());
    push_args.push_back("--remote");
    const CliRun push = fa_jit(with_cache(push_args, copy_of_warmed_cache()), remote);
    INFO("warm --remote: " << push.err);
    CHECK(push.exit_code == 0);
    CHECK(json_of(push)["remote_not_pushed"] == 0);
    const json listed = json_of(fa_jit({"remote", "ls", "--json"}, remote));
    CHECK(listed["entries"].size() == warmed.variants);
    const json remote_stats = json_of(fa_jit({"remote", "stats", "--json"}, remote));
    CHECK(remote_stats["entries"] == warmed.variants);
    for (const auto& [arch, count] : warmed.per_arch) CHECK(remote_stats["per_arch"][arch]["entries"] == count);

    // A machine with an empty cache gets every variant from the store.
    const fs::path fresh_machine = fresh_directory("fresh-machine");
    const json fetched = json_of(fa_jit(with_cache(warm_preset_args(*warm_targets()), fresh_machine), remote));
    CHECK(fetched["compiled"] == 0);
    CHECK(fetched["cached"] == warmed.variants);
    const json stats = json_of(fa_jit(with_cache({"stats", "--json"}, fresh_machine)));
    CHECK(stats["counters"]["compiles"] == 0);
    CHECK(stats["counters"]["remote_hits"] == warmed.variants);
    CHECK(stats["counters"]["remote_rejected"] == 0);
    CHECK(stats["counters"]["remote_bytes_read"].get<std::uint64_t>() > 0);
    const CliRun table = fa_jit(with_cache({"stats"}, fresh_machine));
    CHECK(std::regex_search(table.out, std::regex("remote hits +" + std::to_string(warmed.variants) + "\\b")));

    const json cleared = json_of(fa_jit({"remote", "clear", "--json"}, remote));
    CHECK(cleared["removed_entries"] == warmed.variants);
    CHECK(json_of(fa_jit({"remote", "ls", "--json"}, remote))["entries"].empty());

    server.kill_hard();
    const CliRun dead = fa_jit({"remote", "ls"}, remote);
    CHECK(dead.exit_code == exit_failed);
    CHECK(dead.err.find("remote cache:") != std::string::npos);
}
#else
TEST_CASE("fa-jit remote against a real server") {
    MESSAGE("skipped: this build has no fleet cache or found no redis-server");
}
#endif
