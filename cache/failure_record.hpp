#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fajit::cache {

// A failure record remembers that producing something failed (a kernel the compiler
// rejected, say), so later processes skip it instead of failing again. Its details are the
// caller's JSON object; the cache only stores them. On disk a record is an entry (same
// container, checksum and version, see cache/FORMAT.md) whose metadata is the details and
// whose payload is empty, so damage is caught exactly as in entries.
// Throws std::invalid_argument unless details is an object, and what encode_entry throws.
std::vector<std::byte> encode_failure_record(const nlohmann::json& details);

struct FailureDecodeResult {
    std::optional<nlohmann::json> details;
    std::string error;  // empty on success, otherwise names what is wrong
};

// Everything decode_entry checks, and that the metadata is an object and the payload empty.
FailureDecodeResult decode_failure_record(std::span<const std::byte> bytes);

}  // namespace fajit::cache
