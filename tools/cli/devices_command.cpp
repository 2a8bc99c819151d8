// fa-jit devices: what each backend sees, and why a backend sees nothing.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"
#include "human_units.hpp"
#include "text_table.hpp"

namespace fajit::cli {
namespace {

int run_devices(const CommonOptions& common) {
    const Runtime runtime(resolve_options(common));
    const auto devices = runtime.devices();
    const auto unavailable = runtime.unavailable_backends();
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const Device& device : devices)
            list.push_back({{"backend", device.backend},
                            {"ordinal", device.ordinal},
                            {"name", device.name},
                            {"arch", device.arch},
                            {"compute_units", device.compute_units},
                            {"shared_memory_per_block", device.shared_memory_per_block}});
        std::cout << nlohmann::json{{"devices", std::move(list)}, {"unavailable", unavailable}}.dump(2) << "\n";
        return exit_success;
    }
    using Align = TextTable::Align;
    TextTable table({Align::left, Align::left, Align::left, Align::right, Align::right});
    table.add_row({"DEVICE", "ARCH", "NAME", "CUs/SMs", "SHARED/BLOCK"});
    for (const Device& device : devices)
        table.add_row({device.backend + ":" + std::to_string(device.ordinal), device.arch, device.name,
                       std::to_string(device.compute_units), format_bytes(device.shared_memory_per_block)});
    if (devices.empty())
        std::cout << "no devices\n";
    else
        table.print(std::cout);
    for (const std::string& reason : unavailable) std::cout << "unavailable: " << reason << "\n";
    return exit_success;
}

}  // namespace

Command add_devices_command(CLI::App& app) {
    auto common = std::make_shared<CommonOptions>();
    auto* devices = app.add_subcommand("devices", "list the devices the backends see, and why a backend sees none");
    add_common_options(*devices, *common);
    return {devices, [common] { return run_devices(*common); }};
}

}  // namespace fajit::cli
