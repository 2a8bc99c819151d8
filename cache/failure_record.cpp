#include "cache/failure_record.hpp"

#include <stdexcept>

#include "cache/entry.hpp"

namespace fajit::cache {

std::vector<std::byte> encode_failure_record(const nlohmann::json& details) {
    // Refused here so that every record written can be read back.
    if (!details.is_object()) throw std::invalid_argument("failure details must be a JSON object");
    return encode_entry(Entry{details, {}});
}

FailureDecodeResult decode_failure_record(std::span<const std::byte> bytes) {
    DecodeResult decoded = decode_entry(bytes);
    if (!decoded.entry) return {std::nullopt, std::move(decoded.error)};
    if (!decoded.entry->payload.empty()) {
        return {std::nullopt, "a failure record has no payload, this one has " +
                                  std::to_string(decoded.entry->payload.size()) + " bytes"};
    }
    if (!decoded.entry->metadata.is_object()) return {std::nullopt, "failure details are not a JSON object"};
    return {std::move(decoded.entry->metadata), {}};
}

}  // namespace fajit::cache
