#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fajit::cache {

// The on-disk entry format; cache/FORMAT.md is its specification.
inline constexpr std::uint32_t entry_format_version = 1;

// A cached artifact: free-form metadata (compiler log, lowered names, ...) and opaque bytes.
struct Entry {
    nlohmann::json metadata;
    std::vector<std::byte> payload;

    bool operator==(const Entry&) const = default;
};

// The header text an entry stores for metadata: its JSON, with any invalid UTF-8 in its strings
// (a compiler log with a stray byte, say) written as U+FFFD, so that every metadata can be stored.
std::string metadata_text(const nlohmann::json& metadata);

// Throws std::length_error if the metadata text exceeds the format's 4 GiB header limit.
std::vector<std::byte> encode_entry(const Entry& entry);

struct DecodeResult {
    std::optional<Entry> entry;
    std::string error;  // empty on success, otherwise names what is wrong
};

// Accepts exactly the bytes encode_entry produces and nothing else; never reads outside `bytes`.
DecodeResult decode_entry(std::span<const std::byte> bytes);

// Listing shows metadata without reading whole payloads: read entry_preamble_size bytes, ask
// metadata_prefix_size how many leading bytes hold the metadata, read those and peek.
// Nothing is verified; only decode_entry decides whether an entry is sound.
inline constexpr std::size_t entry_preamble_size = 40;
std::optional<std::size_t> metadata_prefix_size(std::span<const std::byte> preamble);
std::optional<nlohmann::json> peek_metadata(std::span<const std::byte> prefix);

}  // namespace fajit::cache
