#include "cache/entry.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "cache/checksum.hpp"

namespace fajit::cache {

namespace {

constexpr std::array<char, 8> magic = {'F', 'A', 'J', 'I', 'T', 'C', 'O', '\0'};

// Fixed preamble: magic, version (u32), header length (u32), payload length (u64), checksum.
constexpr std::size_t version_offset = 8;
constexpr std::size_t header_length_offset = 12;
constexpr std::size_t payload_length_offset = 16;
constexpr std::size_t checksum_offset = 24;
constexpr std::size_t preamble_size = entry_preamble_size;

template <typename Unsigned>
void put_little_endian(std::byte* out, Unsigned value) {
    for (std::size_t i = 0; i < sizeof(Unsigned); ++i) out[i] = static_cast<std::byte>(value >> (8 * i) & 0xff);
}

template <typename Unsigned>
Unsigned get_little_endian(const std::byte* in) {
    Unsigned value = 0;
    for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
        value |= static_cast<Unsigned>(std::to_integer<Unsigned>(in[i]) << (8 * i));
    return value;
}

DecodeResult failure(std::string error) { return DecodeResult{std::nullopt, std::move(error)}; }

bool has_entry_preamble(std::span<const std::byte> bytes) {
    return bytes.size() >= preamble_size && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0 &&
           get_little_endian<std::uint32_t>(bytes.data() + version_offset) == entry_format_version;
}

}  // namespace

std::string metadata_text(const nlohmann::json& metadata) {
    return metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::byte> encode_entry(const Entry& entry) {
    const std::string header = metadata_text(entry.metadata);
    if (header.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw std::length_error("cache entry metadata exceeds 4 GiB");
    }
    std::vector<std::byte> bytes(preamble_size + header.size() + entry.payload.size());
    std::byte* out = bytes.data();
    std::memcpy(out, magic.data(), magic.size());
    put_little_endian<std::uint32_t>(out + version_offset, entry_format_version);
    put_little_endian<std::uint32_t>(out + header_length_offset, static_cast<std::uint32_t>(header.size()));
    put_little_endian<std::uint64_t>(out + payload_length_offset, entry.payload.size());
    std::memcpy(out + preamble_size, header.data(), header.size());
    std::copy(entry.payload.begin(), entry.payload.end(), out + preamble_size + header.size());
    const Digest128 checksum = xxh3_128(std::span(bytes).subspan(preamble_size));
    std::memcpy(out + checksum_offset, checksum.data(), checksum.size());
    return bytes;
}

DecodeResult decode_entry(std::span<const std::byte> bytes) {
    if (bytes.size() < preamble_size) {
        return failure("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                       std::to_string(preamble_size) + "-byte preamble");
    }
    const std::byte* in = bytes.data();
    if (std::memcmp(in, magic.data(), magic.size()) != 0) return failure("bad magic: not a fa-jit cache entry");

    const auto version = get_little_endian<std::uint32_t>(in + version_offset);
    if (version != entry_format_version) {
        return failure("unsupported format version " + std::to_string(version) + " (expected " +
                       std::to_string(entry_format_version) + ")");
    }

    // Compare against the bytes actually present before adding anything, so huge lengths cannot overflow.
    const std::uint64_t available = bytes.size() - preamble_size;
    const std::uint64_t header_length = get_little_endian<std::uint32_t>(in + header_length_offset);
    const auto payload_length = get_little_endian<std::uint64_t>(in + payload_length_offset);
    if (header_length > available || payload_length > available - header_length) {
        return failure("truncated: header (" + std::to_string(header_length) + ") + payload (" +
                       std::to_string(payload_length) + ") bytes exceed the " + std::to_string(available) +
                       " bytes present");
    }
    if (header_length + payload_length != available) {
        return failure(std::to_string(available - header_length - payload_length) +
                       " trailing bytes after the payload");
    }

    const auto body = bytes.subspan(preamble_size);
    const Digest128 actual = xxh3_128(body);
    if (std::memcmp(actual.data(), in + checksum_offset, actual.size()) != 0) return failure("checksum mismatch");

    const std::string_view header(reinterpret_cast<const char*>(body.data()), header_length);
    nlohmann::json metadata = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (metadata.is_discarded()) return failure("metadata is not valid JSON");

    const auto payload = body.subspan(header_length);
    return DecodeResult{Entry{std::move(metadata), std::vector<std::byte>(payload.begin(), payload.end())}, {}};
}

std::optional<std::size_t> metadata_prefix_size(std::span<const std::byte> preamble) {
    if (!has_entry_preamble(preamble)) return std::nullopt;
    return preamble_size + get_little_endian<std::uint32_t>(preamble.data() + header_length_offset);
}

std::optional<nlohmann::json> peek_metadata(std::span<const std::byte> prefix) {
    const auto size = metadata_prefix_size(prefix);
    if (!size || prefix.size() < *size) return std::nullopt;
    const std::string_view header(reinterpret_cast<const char*>(prefix.data()) + preamble_size, *size - preamble_size);
    nlohmann::json metadata = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (metadata.is_discarded()) return std::nullopt;
    return metadata;
}

}  // namespace fajit::cache
