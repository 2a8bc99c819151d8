#include "cache/remote_value.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <cstring>
#include <stdexcept>

namespace fajit::cache {

namespace {

constexpr std::array<char, 8> signed_magic = {'F', 'A', 'J', 'I', 'T', 'S', 'G', '\0'};
constexpr std::size_t tag_size = 32;  // SHA-256
constexpr std::size_t signed_prefix_size = signed_magic.size() + tag_size;

std::array<unsigned char, tag_size> tag_of(std::string_view name, std::span<const std::byte> entry_bytes,
                                           std::string_view signing_key) {
    // name, a newline (names hold none), then the entry: the tag binds the bytes to their place.
    std::vector<unsigned char> message(name.begin(), name.end());
    message.push_back('\n');
    const auto* bytes = reinterpret_cast<const unsigned char*>(entry_bytes.data());
    message.insert(message.end(), bytes, bytes + entry_bytes.size());
    std::array<unsigned char, tag_size> tag{};
    unsigned int length = 0;
    if (!HMAC(EVP_sha256(), signing_key.data(), static_cast<int>(signing_key.size()), message.data(), message.size(),
              tag.data(), &length) ||
        length != tag_size)
        throw std::runtime_error("HMAC-SHA256 failed");
    return tag;
}

bool is_signed(std::span<const std::byte> value) {
    return value.size() >= signed_prefix_size &&
           std::memcmp(value.data(), signed_magic.data(), signed_magic.size()) == 0;
}

}  // namespace

std::vector<std::byte> seal_remote_value(std::string_view name, std::span<const std::byte> entry_bytes,
                                         std::string_view signing_key) {
    if (signing_key.empty()) return {entry_bytes.begin(), entry_bytes.end()};
    const auto tag = tag_of(name, entry_bytes, signing_key);
    std::vector<std::byte> value(signed_prefix_size + entry_bytes.size());
    std::memcpy(value.data(), signed_magic.data(), signed_magic.size());
    std::memcpy(value.data() + signed_magic.size(), tag.data(), tag.size());
    std::memcpy(value.data() + signed_prefix_size, entry_bytes.data(), entry_bytes.size());
    return value;
}

UnsealedValue unseal_remote_value(std::string_view name, std::span<const std::byte> value,
                                  std::string_view signing_key) {
    if (!is_signed(value)) {
        if (!signing_key.empty()) return {std::nullopt, "not signed, and FAJIT_REMOTE_CACHE_KEY requires a signature"};
        return {std::vector<std::byte>(value.begin(), value.end()), ""};
    }
    const auto entry_bytes = value.subspan(signed_prefix_size);
    if (!signing_key.empty()) {
        const auto expected = tag_of(name, entry_bytes, signing_key);
        if (CRYPTO_memcmp(expected.data(), value.data() + signed_magic.size(), tag_size) != 0)
            return {std::nullopt, "wrong signature (signed with another key, or changed since)"};
    }
    return {std::vector<std::byte>(entry_bytes.begin(), entry_bytes.end()), ""};
}

}  // namespace fajit::cache
