#include "cache/key.hpp"

#include <cstddef>
#include <span>

#include "cache/checksum.hpp"

namespace fajit::cache {

namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";

std::optional<std::uint8_t> hex_value(char c) {
    if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<std::uint8_t>(c - 'A' + 10);
    return std::nullopt;
}

}  // namespace

std::string Key::hex() const {
    std::string text;
    text.reserve(digest.size() * 2);
    for (std::uint8_t byte : digest) {
        text.push_back(hex_digits[byte >> 4]);
        text.push_back(hex_digits[byte & 0x0f]);
    }
    return text;
}

std::optional<Key> Key::from_hex(std::string_view hex) {
    Key key;
    if (hex.size() != key.digest.size() * 2) return std::nullopt;
    for (std::size_t i = 0; i < key.digest.size(); ++i) {
        auto high = hex_value(hex[2 * i]);
        auto low = hex_value(hex[2 * i + 1]);
        if (!high || !low) return std::nullopt;
        key.digest[i] = static_cast<std::uint8_t>(*high << 4 | *low);
    }
    return key;
}

KeyBuilder& KeyBuilder::add(std::string_view field, std::string_view value) {
    append_length_prefixed(field);
    append_length_prefixed(value);
    return *this;
}

Key KeyBuilder::finish() const { return Key{xxh3_128(std::as_bytes(std::span(serialized_)))}; }

void KeyBuilder::append_length_prefixed(std::string_view text) {
    // Fixed-width little-endian length, so the serialization is the same on every host.
    std::uint64_t length = text.size();
    for (int i = 0; i < 8; ++i) serialized_.push_back(static_cast<char>(length >> (8 * i) & 0xff));
    serialized_.append(text);
}

}  // namespace fajit::cache
