#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fajit::cache {

// Content address of a cache entry. Callers decide what goes into it (spec, arch,
// toolchain identity, ...); the cache only stores and compares it.
struct Key {
    std::array<std::uint8_t, 16> digest{};

    // 32 lowercase hex digits; also the entry's file name.
    std::string hex() const;
    // Inverse of hex(); nullopt unless given exactly 32 hex digits (either case).
    static std::optional<Key> from_hex(std::string_view hex);

    bool operator==(const Key&) const = default;
};

// Hashes (XXH3-128) a sequence of named fields. Every name and value is length-prefixed,
// so moving bytes across a boundary changes the key: ("ab","c") != ("a","bc").
// Field order matters; callers add fields in a fixed order.
class KeyBuilder {
public:
    KeyBuilder& add(std::string_view field, std::string_view value);
    Key finish() const;

private:
    void append_length_prefixed(std::string_view text);

    std::string serialized_;
};

}  // namespace fajit::cache
