#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <random>

#include "cache/checksum.hpp"
#include "cache/entry.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using fajit::cache::testing::entry_for;

namespace {

std::vector<std::byte> sample_bytes() { return encode_entry(entry_for("sample", 48)); }

void put_u64(std::vector<std::byte>& bytes, std::size_t offset, std::uint64_t value) {
    for (int i = 0; i < 8; ++i) bytes[offset + i] = static_cast<std::byte>(value >> (8 * i));
}

void reseal(std::vector<std::byte>& bytes) {
    const Digest128 checksum = xxh3_128(std::span(bytes).subspan(entry_preamble_size));
    std::memcpy(bytes.data() + 24, checksum.data(), checksum.size());
}

}  // namespace

TEST_CASE("an entry survives encode and decode") {
    for (const Entry& entry : {entry_for("round trip", 1000), entry_for("empty payload", 0), Entry{}}) {
        const DecodeResult decoded = decode_entry(encode_entry(entry));
        REQUIRE_MESSAGE(decoded.entry, decoded.error);
        CHECK(decoded.error.empty());
        CHECK(*decoded.entry == entry);
    }
    Entry binary{{{"names", {"_Z4attnv", ""}}, {"bytes", 3}}, {std::byte{0}, std::byte{0xff}, std::byte{0}}};
    CHECK(decode_entry(encode_entry(binary)).entry == binary);
}

TEST_CASE("metadata with invalid UTF-8 is stored, its stray bytes as U+FFFD") {
    const Entry entry{{{"log", "bad \xff byte"}, {"compiler", "\xc3"}}, {std::byte{7}}};
    const DecodeResult decoded = decode_entry(encode_entry(entry));
    REQUIRE_MESSAGE(decoded.entry, decoded.error);
    CHECK(decoded.entry->metadata == nlohmann::json{{"log", "bad \xef\xbf\xbd byte"}, {"compiler", "\xef\xbf\xbd"}});
    CHECK(decoded.entry->payload == entry.payload);
}

TEST_CASE("the encoding has the documented fixed layout") {
    const Entry entry = entry_for("layout", 5);
    const auto bytes = encode_entry(entry);
    const std::string header = entry.metadata.dump();
    REQUIRE(bytes.size() == 40 + header.size() + 5);
    CHECK(std::memcmp(bytes.data(), "FAJITCO\0", 8) == 0);
    CHECK(std::to_integer<int>(bytes[8]) == 1);  // version 1, little-endian
    CHECK(std::to_integer<int>(bytes[9]) == 0);
    CHECK(std::to_integer<std::size_t>(bytes[12]) == header.size());  // header length, little-endian
    CHECK(std::to_integer<int>(bytes[16]) == 5);                      // payload length, little-endian
    CHECK(std::memcmp(bytes.data() + 40, header.data(), header.size()) == 0);
    const Digest128 checksum = xxh3_128(std::span(bytes).subspan(40));
    CHECK(std::memcmp(bytes.data() + 24, checksum.data(), 16) == 0);
}

TEST_CASE("every truncation of a valid entry is rejected") {
    const auto bytes = sample_bytes();
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        CAPTURE(length);
        const DecodeResult decoded = decode_entry(std::span(bytes).first(length));
        CHECK_FALSE(decoded.entry);
        CHECK_FALSE(decoded.error.empty());
    }
}

TEST_CASE("every single-bit flip of a valid entry is rejected") {
    auto bytes = sample_bytes();
    for (std::size_t offset = 0; offset < bytes.size(); ++offset) {
        for (int bit = 0; bit < 8; ++bit) {
            bytes[offset] ^= static_cast<std::byte>(1 << bit);
            const DecodeResult decoded = decode_entry(bytes);
            bytes[offset] ^= static_cast<std::byte>(1 << bit);
            CAPTURE(offset);
            CAPTURE(bit);
            CHECK_FALSE(decoded.entry);
            CHECK_FALSE(decoded.error.empty());
        }
    }
    CHECK(decode_entry(bytes).entry);  // the flips were undone
}

TEST_CASE("random multi-byte damage is rejected") {
    const auto original = sample_bytes();
    std::mt19937 random(1234);
    for (int round = 0; round < 2000; ++round) {
        auto bytes = original;
        const int flips = 1 + static_cast<int>(random() % 8);
        for (int i = 0; i < flips; ++i) bytes[random() % bytes.size()] ^= static_cast<std::byte>(1 + random() % 255);
        if (bytes == original) continue;
        CHECK_FALSE(decode_entry(bytes).entry);
    }
}

TEST_CASE("the decoder names what is wrong") {
    const auto valid = sample_bytes();

    auto bad_magic = valid;
    bad_magic[0] = std::byte{'X'};
    CHECK(decode_entry(bad_magic).error.find("magic") != std::string::npos);

    auto future_version = valid;
    future_version[8] = std::byte{2};
    CHECK(decode_entry(future_version).error.find("version") != std::string::npos);

    auto huge_payload = valid;
    put_u64(huge_payload, 16, std::numeric_limits<std::uint64_t>::max());
    CHECK(decode_entry(huge_payload).error.find("truncated") != std::string::npos);

    auto huge_header = valid;
    huge_header[12] = huge_header[13] = huge_header[14] = huge_header[15] = std::byte{0xff};
    CHECK(decode_entry(huge_header).error.find("truncated") != std::string::npos);

    auto trailing = valid;
    trailing.push_back(std::byte{0});
    CHECK(decode_entry(trailing).error.find("trailing") != std::string::npos);

    auto flipped_payload = valid;
    flipped_payload.back() ^= std::byte{1};
    CHECK(decode_entry(flipped_payload).error.find("checksum") != std::string::npos);

    // Checksum right, JSON wrong: only the parse can catch it.
    auto bad_json = valid;
    bad_json[40] = std::byte{'{'};
    bad_json[41] = std::byte{'{'};
    reseal(bad_json);
    CHECK(decode_entry(bad_json).error.find("JSON") != std::string::npos);

    CHECK(decode_entry({}).error.find("truncated") != std::string::npos);
}

TEST_CASE("metadata can be read from the prefix alone") {
    const Entry entry = entry_for("peek", 100000);
    const auto bytes = encode_entry(entry);
    const auto prefix_size = metadata_prefix_size(std::span(bytes).first(entry_preamble_size));
    REQUIRE(prefix_size);
    CHECK(*prefix_size == entry_preamble_size + entry.metadata.dump().size());
    CHECK(peek_metadata(std::span(bytes).first(*prefix_size)) == entry.metadata);
    CHECK_FALSE(peek_metadata(std::span(bytes).first(*prefix_size - 1)));
    CHECK_FALSE(metadata_prefix_size(std::span(bytes).first(10)));
}
