// The memo of file hashes that spares a new process hashing its compiler libraries: used
// only while a file is unchanged, whatever about it changes.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <sys/stat.h>

#include "cache/checksum.hpp"
#include "cache/file_fingerprint_memo.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// What the memo must answer: the hash of the bytes the file holds now.
std::string hash_now(const fs::path& file) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(*xxh3_64_of_file(file)));
    return hex;
}

// A copy of this test program: megabytes of real library-like bytes, changed at will.
fs::path copy_of_this_program(const fs::path& directory) {
    const fs::path copy = directory / "libcompiler.so";
    fs::copy_file("/proc/self/exe", copy);
    return copy;
}

void flip_byte_in_place(const fs::path& file, std::streamoff offset) {
    std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(offset);
    const char byte = static_cast<char>(stream.get());
    stream.seekp(offset);
    stream.put(static_cast<char>(byte ^ 0x40));
}

// Settled at once, so a file written by the test can be remembered without waiting.
FileFingerprintMemo memo_in(const fs::path& directory) { return FileFingerprintMemo(directory / "memo", 0ms); }

}  // namespace

TEST_CASE("a file's hash is remembered across memo objects while the file is unchanged") {
    TempDir dir;
    const fs::path library = copy_of_this_program(dir.path());
    const auto start = std::chrono::steady_clock::now();
    const auto first = memo_in(dir.path()).fingerprint(library);
    const auto hashed = std::chrono::steady_clock::now();
    const auto second = memo_in(dir.path()).fingerprint(library);
    const auto remembered = std::chrono::steady_clock::now();
    REQUIRE(first);
    REQUIRE(second);
    CHECK_FALSE(first->remembered);
    CHECK(second->remembered);
    CHECK(first->hex == hash_now(library));
    CHECK(second->hex == first->hex);
    CHECK(first->hex.size() == 16);
    const double hash_ms = std::chrono::duration<double, std::milli>(hashed - start).count();
    const double memo_ms = std::chrono::duration<double, std::milli>(remembered - hashed).count();
    MESSAGE((fs::file_size(library) >> 10)
            << " KiB: hashed in " << hash_ms << " ms, remembered in " << memo_ms << " ms");
    CHECK(temp_files_under(dir.path()).empty());
}

TEST_CASE("changed content of the same size re-hashes, even with its mtime set back") {
    TempDir dir;
    const fs::path library = copy_of_this_program(dir.path());
    const std::string original = memo_in(dir.path()).fingerprint(library)->hex;
    const auto mtime = fs::last_write_time(library);
    const auto size = fs::file_size(library);

    flip_byte_in_place(library, 4096);
    fs::last_write_time(library, mtime);  // size, mtime and inode as before; only ctime moved
    REQUIRE(fs::file_size(library) == size);
    const auto changed = memo_in(dir.path()).fingerprint(library);
    REQUIRE(changed);
    CHECK_FALSE(changed->remembered);
    CHECK(changed->hex != original);
    CHECK(changed->hex == hash_now(library));
    CHECK(memo_in(dir.path()).fingerprint(library)->remembered);
}

TEST_CASE("a new file at the same path (new inode) or a changed size re-hashes") {
    TempDir dir;
    const fs::path library = copy_of_this_program(dir.path());
    memo_in(dir.path()).fingerprint(library);

    const fs::path replacement = dir.path() / "replacement";
    fs::copy_file(library, replacement);
    flip_byte_in_place(replacement, 100);
    fs::last_write_time(replacement, fs::last_write_time(library));
    fs::rename(replacement, library);
    const auto replaced = memo_in(dir.path()).fingerprint(library);
    CHECK_FALSE(replaced->remembered);
    CHECK(replaced->hex == hash_now(library));

    std::ofstream(library, std::ios::app | std::ios::binary) << "appended";
    const auto grown = memo_in(dir.path()).fingerprint(library);
    CHECK_FALSE(grown->remembered);
    CHECK(grown->hex == hash_now(library));
    CHECK(grown->hex != replaced->hex);
}

TEST_CASE("a file changed just now is hashed but not remembered until it settles") {
    TempDir dir;
    const fs::path library = dir.path() / "fresh.so";
    std::ofstream(library) << "just written";
    const FileFingerprintMemo memo(dir.path() / "memo");  // the default settle time
    CHECK_FALSE(memo.fingerprint(library)->remembered);
    CHECK_FALSE(memo.fingerprint(library)->remembered);
    CHECK_FALSE(fs::exists(dir.path() / "memo"));
}

TEST_CASE("a damaged memo, an unwritable one or none at all only costs a re-hash") {
    TempDir dir;
    const fs::path library = copy_of_this_program(dir.path());
    memo_in(dir.path()).fingerprint(library);
    auto bytes = read_bytes(dir.path() / "memo");
    bytes[bytes.size() / 2] ^= std::byte{1};
    write_bytes(dir.path() / "memo", bytes);
    const auto after_damage = memo_in(dir.path()).fingerprint(library);
    CHECK_FALSE(after_damage->remembered);
    CHECK(after_damage->hex == hash_now(library));
    CHECK(memo_in(dir.path()).fingerprint(library)->remembered);  // rewritten whole

    // A memo of a terabyte (a sparse file) is not read, and is rewritten small.
    fs::resize_file(dir.path() / "memo", 1ull << 40);
    CHECK_FALSE(memo_in(dir.path()).fingerprint(library)->remembered);
    CHECK(fs::file_size(dir.path() / "memo") < 4096);

    std::ofstream(dir.path() / "plain-file") << "x";
    const FileFingerprintMemo unwritable(dir.path() / "plain-file" / "memo", 0ms);
    CHECK(unwritable.fingerprint(library)->hex == hash_now(library));
    CHECK_FALSE(unwritable.fingerprint(library)->remembered);

    const FileFingerprintMemo none({}, 0ms);
    CHECK_FALSE(none.fingerprint(library)->remembered);
    CHECK_FALSE(none.fingerprint(dir.path() / "missing.so"));
}
