#include "cache/cache_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <map>
#include <memory>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "cache/file_reading.hpp"

namespace fajit::cache {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view manifest_member = "manifest.json";
constexpr std::string_view archive_format_name = "fa-jit-pack";
constexpr int archive_format_version = 1;

struct ArchiveDeleter {
    void operator()(archive* handle) const { archive_free(handle); }
};
using ArchiveHandle = std::unique_ptr<archive, ArchiveDeleter>;

struct EntryDeleter {
    void operator()(archive_entry* entry) const { archive_entry_free(entry); }
};

std::string member_name(std::string_view arch, const Key& key) {
    return "entries/" + escape_arch(arch) + "/" + key.hex();
}

[[noreturn]] void fail(archive* handle, const std::string& what) {
    const char* detail = archive_error_string(handle);
    throw ArchiveError(what + (detail ? std::string(": ") + detail : std::string()));
}

bool matches(const nlohmann::json& metadata, const nlohmann::json& wanted) {
    for (const auto& [field, value] : wanted.items()) {
        const auto found = metadata.find(field);
        if (found == metadata.end() || *found != value) return false;
    }
    return true;
}

void write_member(archive* handle, std::string_view name, std::span<const std::byte> bytes) {
    std::unique_ptr<archive_entry, EntryDeleter> header(archive_entry_new());
    archive_entry_set_pathname(header.get(), std::string(name).c_str());
    archive_entry_set_size(header.get(), static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(header.get(), AE_IFREG);
    archive_entry_set_perm(header.get(), 0644);
    if (archive_write_header(handle, header.get()) != ARCHIVE_OK) fail(handle, "cannot write " + std::string(name));
    if (archive_write_data(handle, bytes.data(), bytes.size()) != static_cast<la_ssize_t>(bytes.size()))
        fail(handle, "cannot write " + std::string(name));
}

std::vector<std::byte> read_member_data(archive* handle, const std::string& name, std::uint64_t limit) {
    std::vector<std::byte> bytes;
    std::byte buffer[64 * 1024];
    for (;;) {
        const la_ssize_t got = archive_read_data(handle, buffer, sizeof buffer);
        if (got < 0) fail(handle, "cannot read " + name);
        if (got == 0) return bytes;
        if (bytes.size() + static_cast<std::uint64_t>(got) > limit)
            throw ArchiveError(name + " is larger than the manifest says");
        bytes.insert(bytes.end(), buffer, buffer + got);
    }
}

struct ManifestItem {
    std::string arch;
    Key key;
    std::uint64_t bytes = 0;
};

std::map<std::string, ManifestItem> parse_manifest(std::span<const std::byte> bytes) {
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                         reinterpret_cast<const char*>(bytes.data()) + bytes.size());
    } catch (const nlohmann::json::exception& error) {
        throw ArchiveError(std::string("the manifest is not JSON: ") + error.what());
    }
    if (!manifest.is_object() || manifest.value("format", "") != archive_format_name ||
        manifest.value("version", 0) != archive_format_version)
        throw ArchiveError("not a fa-jit pack archive of a version this fa-jit reads");
    if (manifest.value("entry_format_version", 0u) != entry_format_version)
        throw ArchiveError("the archive holds entries of format version " +
                           manifest.value("entry_format_version", nlohmann::json()).dump() + "; this fa-jit reads " +
                           std::to_string(entry_format_version));
    std::map<std::string, ManifestItem> items;
    try {
        for (const auto& item : manifest.at("entries")) {
            ManifestItem parsed;
            parsed.arch = item.at("arch").get<std::string>();
            const auto key = Key::from_hex(item.at("key").get<std::string>());
            if (!key) throw ArchiveError("the manifest names a malformed key " + item.at("key").dump());
            parsed.key = *key;
            parsed.bytes = item.at("bytes").get<std::uint64_t>();
            if (!items.emplace(member_name(parsed.arch, parsed.key), parsed).second)
                throw ArchiveError("the manifest lists " + member_name(parsed.arch, parsed.key) + " twice");
        }
    } catch (const nlohmann::json::exception& error) {
        throw ArchiveError(std::string("malformed manifest: ") + error.what());
    }
    return items;
}

// Why no archive is written for a filter that selects nothing: an image built from an
// archive of nothing would ship an empty cache without anyone noticing.
std::string nothing_to_pack(std::size_t listed, std::uint64_t damaged, const PackFilter& filter) {
    if (listed == 0) return "nothing to pack: the cache holds no entries; no archive was written";
    std::string wanted;
    if (filter.arch) wanted = "arch " + *filter.arch;
    for (const auto& [field, value] : filter.metadata.items())
        wanted +=
            (wanted.empty() ? "" : ", ") + field + " " + (value.is_string() ? value.get<std::string>() : value.dump());
    return "nothing to pack: none of the cache's " + std::to_string(listed) + " entries " +
           (wanted.empty() ? std::string("is sound") : "matches " + wanted) +
           (damaged ? " (" + std::to_string(damaged) + " of them damaged)" : std::string()) +
           "; no archive was written";
}

}  // namespace

PackResult pack_cache(const DiskCache& cache, const fs::path& archive_path, const PackFilter& filter) {
    struct Selected {
        EntryInfo info;
        std::vector<std::byte> bytes;
    };
    std::vector<Selected> selected;
    PackResult result;
    std::vector<EntryInfo> listed = cache.list();
    for (EntryInfo& info : listed) {
        if (filter.arch && info.arch != *filter.arch) continue;
        std::error_code error;
        auto bytes = read_file(info.path, error, cache.config().max_bytes);
        if (!bytes) {
            // Removed since it was listed, or too large or not a file, which is damage.
            if (error != std::errc::no_such_file_or_directory) ++result.skipped_damaged;
            continue;
        }
        const DecodeResult decoded = decode_entry(*bytes);
        if (!decoded.entry) {
            ++result.skipped_damaged;
            continue;
        }
        if (!matches(decoded.entry->metadata, filter.metadata)) continue;
        selected.push_back({std::move(info), std::move(*bytes)});
    }
    if (selected.empty()) throw ArchiveError(nothing_to_pack(listed.size(), result.skipped_damaged, filter));

    nlohmann::json entries = nlohmann::json::array();
    for (const Selected& item : selected)
        entries.push_back({{"arch", item.info.arch}, {"key", item.info.key.hex()}, {"bytes", item.bytes.size()}});
    const std::string manifest = nlohmann::json{
        {"format", archive_format_name},
        {"version", archive_format_version},
        {"entry_format_version", entry_format_version},
        {"entries",
         std::move(entries)}}.dump(2);

    const fs::path temp_path = archive_path.string() + std::string(temp_marker) + std::to_string(::getpid());
    {
        ArchiveHandle handle(archive_write_new());
        if (archive_write_add_filter_zstd(handle.get()) != ARCHIVE_OK ||
            archive_write_set_format_pax_restricted(handle.get()) != ARCHIVE_OK)
            fail(handle.get(), "cannot set up a zstd tar writer");
        if (archive_write_open_filename(handle.get(), temp_path.c_str()) != ARCHIVE_OK)
            fail(handle.get(), "cannot create " + temp_path.string());
        try {
            write_member(handle.get(), manifest_member, std::as_bytes(std::span(manifest)));
            for (const Selected& item : selected) {
                write_member(handle.get(), member_name(item.info.arch, item.info.key), item.bytes);
                ++result.entries;
                result.bytes += item.bytes.size();
            }
            if (archive_write_close(handle.get()) != ARCHIVE_OK)
                fail(handle.get(), "cannot finish " + temp_path.string());
        } catch (...) {
            std::error_code ignored;
            fs::remove(temp_path, ignored);
            throw;
        }
    }
    std::error_code error;
    fs::rename(temp_path, archive_path, error);
    if (error) {
        fs::remove(temp_path, error);
        throw ArchiveError("cannot move the archive to " + archive_path.string() + ": " + error.message());
    }
    return result;
}

UnpackResult unpack_cache(DiskCache& cache, const fs::path& archive_path) {
    ArchiveHandle handle(archive_read_new());
    archive_read_support_filter_all(handle.get());
    archive_read_support_format_tar(handle.get());
    if (archive_read_open_filename(handle.get(), archive_path.c_str(), 64 * 1024) != ARCHIVE_OK)
        fail(handle.get(), "cannot open " + archive_path.string());

    archive_entry* header = nullptr;
    const auto next = [&]() -> bool {
        const int status = archive_read_next_header(handle.get(), &header);
        if (status == ARCHIVE_EOF) return false;
        if (status < ARCHIVE_WARN) fail(handle.get(), archive_path.string() + " is damaged");
        return true;
    };
    if (!next() || archive_entry_pathname(header) != manifest_member)
        throw ArchiveError(archive_path.string() + " does not start with a manifest: not a fa-jit pack archive");
    // The manifest is small; anything beyond this is not one fa-jit wrote.
    std::map<std::string, ManifestItem> expected =
        parse_manifest(read_member_data(handle.get(), std::string(manifest_member), 256ull << 20));

    // Everything is checked and held in memory before the first entry is stored.
    std::vector<std::pair<ManifestItem, Entry>> verified;
    while (next()) {
        const std::string name = archive_entry_pathname(header);
        const auto item = expected.find(name);
        if (item == expected.end()) throw ArchiveError(name + " is not in the manifest (or appears twice)");
        const std::vector<std::byte> bytes = read_member_data(handle.get(), name, item->second.bytes);
        if (bytes.size() != item->second.bytes)
            throw ArchiveError(name + " holds " + std::to_string(bytes.size()) + " bytes; the manifest says " +
                               std::to_string(item->second.bytes));
        DecodeResult decoded = decode_entry(bytes);
        if (!decoded.entry) throw ArchiveError(name + " is not a sound entry: " + decoded.error);
        verified.emplace_back(item->second, std::move(*decoded.entry));
        expected.erase(item);
    }
    if (!expected.empty())
        throw ArchiveError(archive_path.string() + " lacks " + std::to_string(expected.size()) +
                           " entries its manifest lists, e.g. " + expected.begin()->first);

    UnpackResult result;
    for (const auto& [item, entry] : verified) {
        if (cache.publish(item.arch, item.key, entry)) {
            ++result.entries;
            result.bytes += item.bytes;
        } else {
            ++result.not_stored;
        }
    }
    return result;
}

}  // namespace fajit::cache
