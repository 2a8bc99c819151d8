#include "dispatch/failed_variants.hpp"

#include <nlohmann/json.hpp>

#include "cache/key.hpp"

namespace fajit {
namespace {

cache::Key key_of(const std::string& spec, const std::string& compiler) {
    return cache::KeyBuilder().add("spec", spec).add("compiler", compiler).add("library", version()).finish();
}

std::string_view name_of(ErrorKind kind) { return kind == ErrorKind::load_failed ? "load_failed" : "compile_failed"; }

}  // namespace

FailedVariants::FailedVariants(cache::DiskCache& disk) : disk_(disk) {}

std::optional<VariantFailure> FailedVariants::find(const KernelSpec& spec, const std::string& compiler) {
    const std::string text = to_string(spec);
    const cache::Key key = key_of(text, compiler);
    if (auto it = in_memory_.find(key.hex()); it != in_memory_.end()) return it->second;
    const auto record = disk_.find_failure(spec.arch, key);
    // A sound record of another variant would mean a key collision; trust only an exact match.
    if (!record || record->value("spec", "") != text || record->value("compiler", "") != compiler) return std::nullopt;
    VariantFailure failure;
    failure.kind = record->value("kind", "") == name_of(ErrorKind::load_failed) ? ErrorKind::load_failed
                                                                                : ErrorKind::compile_failed;
    failure.summary =
        record->value("summary", "") + " (recorded in " + disk_.failure_path(spec.arch, key).string() + ")";
    in_memory_.emplace(key.hex(), failure);
    return failure;
}

void FailedVariants::record(const KernelSpec& spec, const std::string& compiler, const VariantFailure& failure) {
    const std::string text = to_string(spec);
    const cache::Key key = key_of(text, compiler);
    in_memory_[key.hex()] = failure;
    if (disk_failed_ || !failure.verdict) return;
    // spec and family are what fa-jit ls shows and filters on, as for entries.
    const nlohmann::json details = {
        {"spec", text},         {"family", spec.family}, {"compiler", compiler},
        {"library", version()}, {"kind", name_of(failure.kind)},    {"summary", failure.summary}};
    if (!disk_.record_failure(spec.arch, key, details)) disk_failed_ = true;
}

}  // namespace fajit
