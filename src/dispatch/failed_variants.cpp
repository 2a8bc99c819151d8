#include "dispatch/failed_variants.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cache/key.hpp"

namespace fajit {
namespace {

std::string key_of(const std::string& spec, const std::string& compiler) {
    return cache::KeyBuilder().add("spec", spec).add("compiler", compiler).add("library", version()).finish().hex();
}

std::string_view name_of(ErrorKind kind) { return kind == ErrorKind::load_failed ? "load_failed" : "compile_failed"; }

}  // namespace

FailedVariants::FailedVariants(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path FailedVariants::file_of(const std::string& key) const { return directory_ / (key + ".json"); }

std::optional<VariantFailure> FailedVariants::find(const std::string& spec, const std::string& compiler) {
    const std::string key = key_of(spec, compiler);
    if (auto it = in_memory_.find(key); it != in_memory_.end()) return it->second;
    if (directory_.empty()) return std::nullopt;
    std::ifstream file(file_of(key));
    if (!file) return std::nullopt;
    // A damaged record is ignored: the variant is simply tried again.
    const auto record = nlohmann::json::parse(file, nullptr, false);
    if (!record.is_object() || record.value("spec", "") != spec || record.value("compiler", "") != compiler)
        return std::nullopt;
    VariantFailure failure;
    failure.kind = record.value("kind", "") == name_of(ErrorKind::load_failed) ? ErrorKind::load_failed
                                                                               : ErrorKind::compile_failed;
    failure.summary = record.value("summary", "") + " (recorded in " + file_of(key).string() + ")";
    in_memory_.emplace(key, failure);
    return failure;
}

void FailedVariants::record(const std::string& spec, const std::string& compiler, const VariantFailure& failure) {
    const std::string key = key_of(spec, compiler);
    in_memory_[key] = failure;
    if (directory_.empty() || disk_failed_) return;
    const nlohmann::json record = {{"spec", spec},
                                   {"compiler", compiler},
                                   {"library", version()},
                                   {"kind", name_of(failure.kind)},
                                   {"summary", failure.summary}};
    // Written whole under a private name, then renamed: readers never see half a record.
    const auto temporary = directory_ / (key + ".json." + std::to_string(::getpid()) + ".tmp");
    std::error_code error;
    std::filesystem::create_directories(directory_, error);
    if (!error) {
        std::ofstream file(temporary);
        file << record.dump(2) << '\n';
        file.close();
        if (!file) error = std::make_error_code(std::errc::io_error);
    }
    if (!error) std::filesystem::rename(temporary, file_of(key), error);
    if (error) {
        disk_failed_ = true;
        spdlog::warn("cannot record failed variants under {}: {}; remembering them in this process only",
                     directory_.string(), error.message());
        std::filesystem::remove(temporary, error);
    }
}

}  // namespace fajit
