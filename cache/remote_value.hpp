#pragma once
// What the remote tier stores under an entry's name: the entry's bytes exactly as on disk
// (cache/FORMAT.md), or with a signing key, those bytes behind an HMAC-SHA256 tag that covers
// the name too, so a signed entry cannot be replayed under another key or arch.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fajit::cache {

// Empty signing_key: the entry bytes as they are.
std::vector<std::byte> seal_remote_value(std::string_view name, std::span<const std::byte> entry_bytes,
                                         std::string_view signing_key);

struct UnsealedValue {
    std::optional<std::vector<std::byte>> entry_bytes;
    std::string error;  // why the value was refused, when entry_bytes is empty
};

// With a signing key, only a value sealed with that key under this name is accepted. Without
// one, the tag of a signed value cannot be checked and is skipped; the entry's own checks
// still apply.
UnsealedValue unseal_remote_value(std::string_view name, std::span<const std::byte> value,
                                  std::string_view signing_key);

}  // namespace fajit::cache
