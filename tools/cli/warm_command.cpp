// fa-jit warm: precompiles the variants a deployment will ask for, so its first requests
// do not wait for the compiler.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "families/registry.hpp"
#include "manifest.hpp"
#include "presets.hpp"
#include "text_table.hpp"
#include "variant_sweep.hpp"
#include "warm_progress.hpp"
#include "warm_report.hpp"

namespace fajit::cli {
namespace {

constexpr std::size_t failure_log_lines = 12;

struct WarmOptions {
    CommonOptions common;
    SweepRequest sweep;
    std::string manifest;
    int jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    bool dry_run = false;
    bool list_presets = false;
    bool remote = false;
    bool isa = false;
};

int list_presets(bool json) {
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        for (const Preset& preset : presets())
            list.push_back({{"name", preset.name},
                            {"head_dim", preset.head_dim},
                            {"head_dim_v", preset.head_dim_v ? preset.head_dim_v : preset.head_dim},
                            {"gqa_group", preset.gqa_group},
                            {"window_layers", preset.window_layers},
                            {"softcap", preset.softcap},
                            {"sinks", preset.sinks},
                            {"models", preset.models}});
        std::cout << list.dump(2) << "\n";
        return exit_success;
    }
    TextTable table({TextTable::Align::left, TextTable::Align::right, TextTable::Align::right, TextTable::Align::left,
                     TextTable::Align::left});
    table.add_row({"PRESET", "HEAD DIM", "GQA GROUP", "FEATURES", "MODELS"});
    for (const Preset& preset : presets()) {
        std::string features;
        for (const auto& [on, name] : {std::pair<bool, const char*>{preset.window_layers, "window layers"},
                                       {preset.softcap, "softcap"},
                                       {preset.sinks, "sinks"}})
            if (on) features += (features.empty() ? "" : ", ") + std::string(name);
        const std::string dims = std::to_string(preset.head_dim) +
                                 (preset.head_dim_v ? "/" + std::to_string(preset.head_dim_v) : std::string());
        table.add_row({std::string(preset.name), dims, std::to_string(preset.gqa_group),
                       features.empty() ? "-" : features, std::string(preset.models)});
    }
    table.print(std::cout);
    return exit_success;
}

// --arch as given, else the arch of every local device.
std::vector<std::string> target_archs(const std::vector<std::string>& given, const Runtime& runtime) {
    if (!given.empty()) return given;
    std::vector<std::string> archs;
    for (const Device& device : runtime.devices())
        if (std::find(archs.begin(), archs.end(), device.arch) == archs.end()) archs.push_back(device.arch);
    return archs;
}

std::vector<KernelSpec> planned_variants(WarmOptions& options, const Runtime& runtime) {
    const bool sweep_given = !options.sweep.preset.empty() || !options.sweep.head_dims.empty();
    if (!sweep_given && options.manifest.empty())
        throw UsageError("nothing to warm: give --preset, --head-dim or --manifest (see fa-jit warm --help)");
    options.sweep.archs = target_archs(options.sweep.archs, runtime);
    if (options.sweep.archs.empty())
        throw UsageError("no --arch given and no local device found; name the targets with --arch");

    std::vector<KernelSpec> planned;
    if (!options.manifest.empty()) planned = read_manifest(options.manifest, options.sweep.archs);
    if (sweep_given) {
        auto swept = expand_sweep(options.sweep);
        planned.insert(planned.end(), swept.begin(), swept.end());
    }
    // A manifest and flags may name one variant twice; it is warmed once.
    std::vector<KernelSpec> unique;
    std::set<std::string> seen;
    for (KernelSpec& spec : planned)
        if (seen.insert(to_string(spec)).second) unique.push_back(std::move(spec));
    return unique;
}

int print_plan(const std::vector<KernelSpec>& specs, bool json) {
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        for (const KernelSpec& spec : specs) list.push_back(to_string(spec));
        std::cout << nlohmann::json{{"variants", list}, {"total", specs.size()}}.dump(2) << "\n";
    } else {
        for (const KernelSpec& spec : specs) std::cout << to_string(spec) << "\n";
    }
    return exit_success;
}

// Stores every variant the cache holds in the remote tier too, those found as well as those
// compiled; returns how many could not be.
std::size_t push_to_remote(const std::vector<WarmResult>& results, cache::DiskCache& disk) {
    std::size_t failed = 0;
    for (const WarmResult& result : results) {
        if (result.outcome != WarmOutcome::compiled && result.outcome != WarmOutcome::cached) continue;
        if (!disk.push_to_remote(result.spec.arch, *cache::Key::from_hex(result.key))) ++failed;
    }
    return failed;
}

int run_warm(WarmOptions& options, const CommonOptions& common) {
    if (options.list_presets) return list_presets(common.json);
    if (options.jobs < 1) throw UsageError("--jobs=" + std::to_string(options.jobs) + ": must be at least 1");
    const fajit::Options library_options = resolve_options(common);
    if (options.remote && library_options.remote_cache.empty())
        throw UsageError("--remote: no remote cache; set FAJIT_REMOTE_CACHE=redis://host:port/db");
    if (library_options.cache_dir.empty() || library_options.cache_disabled)
        throw UsageError(
            "the disk cache is off (no cache directory, or FAJIT_CACHE_DISABLE=1): warming would keep "
            "nothing; pass --cache-dir");
    Runtime runtime(library_options);
    const std::vector<KernelSpec> specs = planned_variants(options, runtime);
    if (options.dry_run) return print_plan(specs, common.json);

    const auto progress = make_warm_progress(common.quietness > 0);
    const auto start = std::chrono::steady_clock::now();
    auto results = warm_variants(runtime, specs, options.jobs, options.isa, *progress);
    const double wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto disk_cache = open_disk_cache(library_options);
    confirm_stored(results, *disk_cache);
    const std::size_t unpushed = options.remote ? push_to_remote(results, *disk_cache) : 0;

    const WarmTotals totals = total_up(results, wall_seconds, options.jobs);
    print_failures(results, failure_log_lines, std::cerr);
    print_not_stored(results, std::cerr);
    print_costs(results, std::cerr);
    if (unpushed) std::cerr << "fa-jit: warm: " << unpushed << " variants could not be pushed to the remote cache\n";
    if (common.json) {
        nlohmann::json report = warm_report_json(results, totals);
        if (options.remote) report["remote_not_pushed"] = unpushed;
        std::cout << report.dump(2) << "\n";
    } else {
        print_warm_summary(totals, std::cout);
    }
    return totals.failed || totals.not_stored || unpushed || totals.without_cost ? exit_failed : exit_success;
}

}  // namespace

Command add_warm_command(CLI::App& app) {
    auto options = std::make_shared<WarmOptions>();
    auto* warm = app.add_subcommand("warm", "precompile kernel variants into the cache");
    warm->footer(
        "Variants: every combination of --arch x --family x --head-dim x --dtype x --causal x K/V layout\n"
        "(dense, and paged for each --page-size) x query shape (prefill, and with --decode one decode token\n"
        "per sequence) x model features (plain, and windowed with --window; --softcap and --sinks apply to\n"
        "all; a --preset adds its model's), with the tile options applied; combinations a family does not\n"
        "support on an arch are skipped (-vv shows them). The fallback is warmed for prefill shapes only.\n"
        "A --manifest adds the variants it lists (format: tools/cli/MANIFEST.md).\n"
        "Exit status: 0 all variants cached, 1 bad arguments, 2 some variant failed to compile or is not\n"
        "in the cache at the end (read-only or full directory, a cache path that is not a directory, ...),\n"
        "or --isa could not report on one (spilling variants are listed, and do not change the status).");
    auto& sweep = options->sweep;
    warm->add_option("--arch", sweep.archs,
                     "target, full name with features (repeatable or comma-separated; "
                     "default: the local devices' archs)")
        ->delimiter(',');
    warm->add_option("--preset", sweep.preset,
                     "model preset: its head dims, GQA group and model features (see --list-presets)");
    warm->add_flag("--list-presets", options->list_presets, "list the presets and exit");
    warm->add_option("--family", sweep.families,
                     "kernel families: " + family_names(", ") +
                         " (default: for each shape, the family the "
                         "dispatcher runs on that arch, and the fallback, " +
                         std::string(fallback_family().name) + ")")
        ->delimiter(',');
    warm->add_option("--head-dim", sweep.head_dims, "head dims: 128, a list 64,128 or a range 64-128:8")
        ->delimiter(',');
    warm->add_option("--head-dim-v", sweep.head_dim_v,
                     "V's and the output's head dim, for every head dim (default: the preset's, else the head dim)");
    warm->add_option("--dtype", sweep.dtypes, "f16, bf16, f32, e4m3 (default: f16,bf16)")->delimiter(',');
    warm->add_option("--out-dtype", sweep.out_dtype, "O's dtype for e4m3 inputs: f16 or bf16 (default: bf16)");
    warm->add_option("--causal", sweep.causal_modes, "none, top-left, bottom-right (default: none,bottom-right)")
        ->delimiter(',');
    warm->add_option("--page-size", sweep.page_sizes, "also paged K/V with these page sizes (powers of two, 1-256)")
        ->delimiter(',');
    warm->add_flag("--decode", sweep.decode,
                   "also decode shapes: one query row per sequence, its GQA group's heads in one tile");
    warm->add_option("--gqa-group", sweep.gqa_group,
                     "query heads per KV head, for --decode (default: the preset's, else 1)");
    warm->add_flag("--window", sweep.window, "also sliding-window variants (default: the preset's)");
    warm->add_flag("--softcap", sweep.softcap, "every variant with a logit soft-cap (default: the preset's)");
    warm->add_flag("--sinks", sweep.sinks, "every variant with attention sinks (default: the preset's)");
    warm->add_option("--margin", sweep.margin, "rescale margin (default: what the runtime selects, 10, or 6 for e4m3)");
    warm->add_option("--block-q", sweep.block_q, "query rows per block (default: the family's)");
    warm->add_option("--block-k", sweep.block_k, "keys per block step (default: the family's)");
    warm->add_option("--waves", sweep.waves, "waves per block (default: the family's)");
    warm->add_option("--manifest", options->manifest, "JSON file listing variants (tools/cli/MANIFEST.md)")
        ->check(CLI::ExistingFile);
    warm->add_option("-j,--jobs", options->jobs, "parallel compiles (default: the number of cores)");
    warm->add_flag("-n,--dry-run", options->dry_run, "list the variants without compiling them");
    warm->add_flag("--remote", options->remote,
                   "also push every warmed variant, compiled or found, to the remote cache (FAJIT_REMOTE_CACHE)");
    warm->add_flag("--isa", options->isa,
                   "also report what each variant costs, as compile --isa does, and list those that spill "
                   "registers to memory");
    add_common_options(*warm, options->common);
    return {warm, [options] { return run_warm(*options, options->common); }};
}

}  // namespace fajit::cli
