// fa-jit: the operator's tool. Exit codes: 0 success, 1 usage error, 2 the operation ran but failed.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "fajit/runtime.hpp"

namespace {

constexpr int exit_usage = 1;
constexpr int exit_failed = 2;

fajit::KernelSpec parse_or_exit(const std::string& text) {
    auto parsed = fajit::parse_spec(text);
    if (!parsed.spec) {
        std::cerr << "fa-jit: bad spec: " << parsed.error << "\n";
        std::exit(exit_usage);
    }
    return *parsed.spec;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"fa-jit: run-time compiled flash-attention kernels"};
    app.require_subcommand(1);
    std::string cache_dir;
    app.add_option("--cache-dir", cache_dir, "cache directory (default: FAJIT_CACHE_DIR, else ~/.cache/fa-jit)");

    std::string spec_text;
    auto* emit = app.add_subcommand("emit", "print the exact source the library compiles for SPEC");
    emit->add_option("spec", spec_text, "canonical spec, e.g. family=scalar,d=128,dtype=f16,arch=gfx1151")->required();
    auto* compile = app.add_subcommand("compile", "compile one variant into the cache and print its log");
    compile->add_option("spec", spec_text, "canonical spec")->required();
    auto* devices = app.add_subcommand("devices", "list the devices the backends see");

    CLI11_PARSE(app, argc, argv);

    try {
        fajit::Options options = fajit::Options::from_environment();
        if (!cache_dir.empty()) options.cache_dir = cache_dir;
        fajit::Runtime runtime(options);

        if (*emit) {
            std::cout << runtime.emit(parse_or_exit(spec_text));
            return 0;
        }
        if (*compile) {
            const auto kernel = runtime.prepare(parse_or_exit(spec_text));
            std::cout << to_string(kernel.spec) << "\n  key " << kernel.key << "\n  " << kernel.code.size()
                      << " bytes, kernel " << kernel.lowered_name << ", "
                      << (kernel.compiled_now ? "compiled" : "from cache") << " (compile took "
                      << kernel.compile_seconds << " s)\n";
            if (!kernel.log.empty()) std::cout << kernel.log << "\n";
            return 0;
        }
        if (*devices) {
            for (const auto& device : runtime.devices())
                std::cout << device.backend << ":" << device.ordinal << "  " << device.name << "  " << device.arch
                          << "  " << device.compute_units << " CUs/SMs  " << device.shared_memory_per_block
                          << " B shared/block\n";
            for (const auto& reason : runtime.unavailable_backends()) std::cout << "unavailable: " << reason << "\n";
            return 0;
        }
    } catch (const fajit::CompileError& error) {
        std::cerr << "fa-jit: " << error.what() << "\n" << error.log() << "\n";
        return exit_failed;
    } catch (const std::invalid_argument& error) {
        std::cerr << "fa-jit: " << error.what() << "\n";
        return exit_usage;
    } catch (const std::exception& error) {
        std::cerr << "fa-jit: " << error.what() << "\n";
        return exit_failed;
    }
    return 0;
}
