#include "codegen/isa_report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "spec/arch.hpp"

namespace fajit {
namespace {

constexpr std::string_view bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

std::uint64_t read_u64(std::span<const std::byte> bytes, std::size_t offset) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;  // the bundle format is little-endian, as are the hosts that compile it
}

// The AMDGPU ELF inside a clang offload bundle, or the input when it is not one.
std::optional<std::span<const std::byte>> amdgpu_elf(std::span<const std::byte> code, std::string* error) {
    if (code.size() >= 4 && code[0] == std::byte{0x7f} && code[1] == std::byte{'E'} && code[2] == std::byte{'L'} &&
        code[3] == std::byte{'F'})
        return code;
    if (code.size() < bundle_magic.size() + 8 ||
        std::memcmp(code.data(), bundle_magic.data(), bundle_magic.size()) != 0) {
        *error = "not an ELF code object or a clang offload bundle";
        return std::nullopt;
    }
    std::size_t at = bundle_magic.size();
    const std::uint64_t entries = read_u64(code, at);
    at += 8;
    for (std::uint64_t i = 0; i < entries; ++i) {
        if (at + 24 > code.size()) break;
        const std::uint64_t offset = read_u64(code, at), size = read_u64(code, at + 8),
                            id_size = read_u64(code, at + 16);
        at += 24;
        if (at + id_size > code.size()) break;
        const std::string id(reinterpret_cast<const char*>(code.data() + at), id_size);
        at += id_size;
        if (id.find("amdgcn") != std::string::npos && size > 0 && offset + size <= code.size())
            return code.subspan(offset, size);
    }
    *error = "the offload bundle holds no amdgcn code object";
    return std::nullopt;
}

struct ToolRun {
    bool ok = false;
    std::string output;
};

ToolRun run_tool(const std::string& command) {
    ToolRun run;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) {
        run.output = "cannot start: " + command;
        return run;
    }
    char buffer[65536];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, got);
    const int status = ::pclose(pipe);
    run.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return run;
}

std::string quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

long long to_integer(std::string_view text) {
    text = trim(text);
    long long value = 0;
    bool negative = !text.empty() && text.front() == '-';
    if (negative) text.remove_prefix(1);
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return -1;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) break;
        value = value * 10 + (c - '0');
    }
    return negative ? -value : value;
}

// Kernel-level fields of the metadata note, printed by llvm-readelf as YAML:
//   amdhsa.kernels:
//     - .agpr_count: 0
//       .args: [ nested maps, deeper ]
//       .group_segment_fixed_size: 35840
// Fields at the column of a kernel entry's first key belong to the kernel; the
// arguments' own .name/.size lines are nested deeper and ignored.
void parse_notes(std::string_view notes, IsaReport& report) {
    std::map<std::string, std::string> fields;
    std::size_t kernel_column = std::string_view::npos;
    bool in_kernels = false, first_kernel_done = false;
    while (!notes.empty() && !first_kernel_done) {
        const auto end = std::min(notes.find('\n'), notes.size());
        std::string_view line = notes.substr(0, end);
        notes.remove_prefix(std::min(end + 1, notes.size()));
        if (line.find("amdhsa.kernels:") != std::string_view::npos) {
            in_kernels = true;
            continue;
        }
        if (!in_kernels) continue;
        const auto dot = line.find_first_not_of(" -");
        if (dot == std::string_view::npos || line[dot] != '.') {
            // A top-level key (amdhsa.target, amdhsa.version) ends the kernel list.
            if (dot != std::string_view::npos && dot == 0 && kernel_column != std::string_view::npos) break;
            continue;
        }
        const bool starts_entry = line.substr(0, dot).find('-') != std::string_view::npos;
        if (kernel_column == std::string_view::npos && starts_entry) kernel_column = dot;
        if (dot != kernel_column) continue;
        if (starts_entry && !fields.empty()) {
            first_kernel_done = true;  // the next kernel's entry begins
            break;
        }
        const auto colon = line.find(':', dot);
        if (colon == std::string_view::npos) continue;
        fields[std::string(line.substr(dot + 1, colon - dot - 1))] = std::string(trim(line.substr(colon + 1)));
    }
    auto integer = [&](const char* name) -> long long {
        auto it = fields.find(name);
        return it == fields.end() ? -1 : to_integer(it->second);
    };
    report.vgprs = static_cast<int>(integer("vgpr_count"));
    report.sgprs = static_cast<int>(integer("sgpr_count"));
    report.agprs = static_cast<int>(integer("agpr_count"));
    report.lds_bytes = integer("group_segment_fixed_size");
    report.scratch_bytes = integer("private_segment_fixed_size");
    report.vgpr_spills = static_cast<int>(integer("vgpr_spill_count"));
    report.sgpr_spills = static_cast<int>(integer("sgpr_spill_count"));
    report.wave_size = static_cast<int>(integer("wavefront_size"));
    if (auto it = fields.find("symbol"); it != fields.end()) {
        std::string symbol = it->second;
        if (symbol.ends_with(".kd")) symbol.resize(symbol.size() - 3);
        report.kernel = symbol;
    } else if (auto name = fields.find("name"); name != fields.end()) {
        report.kernel = name->second;
    }
}

struct Instruction {
    std::uint64_t address = 0;
    std::string mnemonic;
    std::int64_t branch_target = -1;  // for s_branch / s_cbranch_*
};

// llvm-objdump prints AMDGPU instructions as
//   \ts_cbranch_scc1 65521    // 000000001A40: BFA2FFF1 <label+0x108>
// The SOPP branch immediate counts words from the next instruction.
void parse_disassembly(std::string_view text, IsaReport& report) {
    std::vector<Instruction> instructions;
    while (!text.empty()) {
        const auto end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        const auto comment = line.find("// ");
        if (line.empty() || !std::isspace(static_cast<unsigned char>(line.front())) ||
            comment == std::string_view::npos)
            continue;
        const std::string_view body = trim(line.substr(0, comment));
        if (body.empty()) continue;
        Instruction instruction;
        instruction.mnemonic = std::string(body.substr(0, std::min(body.find(' '), body.size())));
        std::string_view location = trim(line.substr(comment + 3));
        const auto colon = location.find(':');
        if (colon == std::string_view::npos) continue;
        instruction.address = std::strtoull(std::string(location.substr(0, colon)).c_str(), nullptr, 16);
        if (instruction.mnemonic == "s_branch" || instruction.mnemonic.starts_with("s_cbranch_")) {
            const std::string_view operand = trim(body.substr(instruction.mnemonic.size()));
            const long long immediate = to_integer(operand);
            if (immediate >= 0) {
                const auto offset = static_cast<std::int16_t>(static_cast<std::uint16_t>(immediate));
                instruction.branch_target = static_cast<std::int64_t>(instruction.address) + 4 + 4 * offset;
            }
        }
        instructions.push_back(std::move(instruction));
    }

    auto is_matrix = [](const std::string& m) { return m.starts_with("v_wmma_") || m.starts_with("v_mfma_"); };
    for (const auto& instruction : instructions) {
        ++report.instructions;
        if (instruction.mnemonic.starts_with("v_wmma_")) ++report.wmma_instructions;
        if (instruction.mnemonic.starts_with("v_mfma_")) ++report.mfma_instructions;
        if (instruction.mnemonic == "s_barrier") ++report.barrier_instructions;
        if (instruction.mnemonic.starts_with("ds_")) ++report.lds_instructions;
    }
    // Each backward branch closes a loop [target, branch]; take the one with the most
    // matrix instructions, and of those the innermost (shortest).
    for (std::size_t i = 0; i < instructions.size(); ++i) {
        const auto target = instructions[i].branch_target;
        if (target < 0 || static_cast<std::uint64_t>(target) > instructions[i].address) continue;
        int matrix = 0, barriers = 0;
        for (std::size_t j = 0; j <= i; ++j) {
            if (instructions[j].address < static_cast<std::uint64_t>(target)) continue;
            if (is_matrix(instructions[j].mnemonic)) ++matrix;
            if (instructions[j].mnemonic == "s_barrier") ++barriers;
        }
        if (matrix > 0 && matrix > report.loop_matrix_instructions) {
            report.loop_matrix_instructions = matrix;
            report.loop_barriers = barriers;
        }
    }
}

}  // namespace

std::string find_llvm_tool(std::string_view name) {
    std::vector<std::string> names = {std::string(name)};
    for (int version = 20; version >= 14; --version) names.push_back(std::string(name) + "-" + std::to_string(version));
    if (const char* path = std::getenv("PATH")) {
        std::string_view dirs = path;
        while (!dirs.empty()) {
            const auto end = std::min(dirs.find(':'), dirs.size());
            const std::string dir(dirs.substr(0, end));
            dirs.remove_prefix(std::min(end + 1, dirs.size()));
            if (dir.empty()) continue;
            for (const auto& candidate : names)
                if (executable(dir + "/" + candidate)) return dir + "/" + candidate;
        }
    }
    std::vector<std::string> dirs = {"/opt/rocm/llvm/bin"};
    for (int version = 20; version >= 14; --version)
        dirs.push_back("/usr/lib/llvm-" + std::to_string(version) + "/bin");
    for (const auto& dir : dirs)
        if (executable(dir + "/" + std::string(name))) return dir + "/" + std::string(name);
    return {};
}

IsaReport isa_report_from_text(std::string_view notes, std::string_view disassembly) {
    IsaReport report;
    parse_notes(notes, report);
    parse_disassembly(disassembly, report);
    return report;
}

std::optional<IsaReport> isa_report(std::span<const std::byte> code, std::string_view arch, std::string* error) {
    std::string ignored;
    if (!error) error = &ignored;
    const auto elf = amdgpu_elf(code, error);
    if (!elf) return std::nullopt;
    const std::string readelf = find_llvm_tool("llvm-readelf");
    const std::string objdump = find_llvm_tool("llvm-objdump");
    if (readelf.empty() || objdump.empty()) {
        *error = std::string("ISA report needs LLVM's ") + (readelf.empty() ? "llvm-readelf" : "llvm-objdump") +
                 ", not found in PATH, /opt/rocm/llvm/bin or /usr/lib/llvm-*/bin";
        return std::nullopt;
    }

    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fajit-isa-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        *error = "cannot create a temporary file in " + path.substr(0, path.rfind('/'));
        return std::nullopt;
    }
    std::size_t written = 0;
    while (written < elf->size()) {
        const ssize_t n = ::write(fd, elf->data() + written, elf->size() - written);
        if (n <= 0) break;
        written += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (written != elf->size()) {
        ::unlink(path.c_str());
        *error = "cannot write the code object to " + path;
        return std::nullopt;
    }

    const std::string processor(processor_of(arch));
    const ToolRun notes = run_tool(quoted(readelf) + " --notes " + quoted(path));
    const ToolRun disassembly = run_tool(quoted(objdump) + " -d --mcpu=" + quoted(processor) + " " + quoted(path));
    ::unlink(path.c_str());
    if (!notes.ok) {
        *error = readelf + " failed: " + notes.output.substr(0, 2000);
        return std::nullopt;
    }
    if (!disassembly.ok) {
        *error = objdump + " failed: " + disassembly.output.substr(0, 2000);
        return std::nullopt;
    }
    IsaReport report = isa_report_from_text(notes.output, disassembly.output);
    report.processor = processor;
    report.tools = readelf + ", " + objdump;
    if (report.vgprs < 0 && report.lds_bytes < 0) {
        *error = "no kernel metadata (amdhsa.kernels) in the code object's notes";
        return std::nullopt;
    }
    return report;
}

std::string format_isa_report(const IsaReport& report) {
    auto field = [](long long value) { return value < 0 ? std::string("?") : std::to_string(value); };
    std::string text;
    text += "kernel        " + report.kernel + "\n";
    text += "processor     " + report.processor + " (wave" + field(report.wave_size) + ")\n";
    text += "vgprs         " + field(report.vgprs) + (report.agprs > 0 ? " (+" + field(report.agprs) + " agprs)" : "") +
            "\n";
    text += "sgprs         " + field(report.sgprs) + "\n";
    text += "lds bytes     " + field(report.lds_bytes) + "\n";
    text += "scratch bytes " + field(report.scratch_bytes) + "\n";
    text += "spills        " + field(report.vgpr_spills) + " vgpr, " + field(report.sgpr_spills) + " sgpr\n";
    text += "instructions  " + std::to_string(report.instructions) + ": " + std::to_string(report.wmma_instructions) +
            " v_wmma, " + std::to_string(report.mfma_instructions) + " v_mfma, " +
            std::to_string(report.barrier_instructions) + " s_barrier, " + std::to_string(report.lds_instructions) +
            " ds_*\n";
    if (report.loop_barriers >= 0)
        text += "main loop     " + std::to_string(report.loop_matrix_instructions) + " matrix instructions, " +
                std::to_string(report.loop_barriers) + " s_barrier per iteration\n";
    return text;
}

}  // namespace fajit
