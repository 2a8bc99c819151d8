#include "cache/cache_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
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

// object[name] if it has the given JSON type; otherwise an ArchiveError naming the field as
// `where` + name ("entries[3].bytes") and saying what it must be.
const nlohmann::json& manifest_field(const nlohmann::json& object, std::string_view where, std::string_view name,
                                     nlohmann::json::value_t type, std::string_view what_it_must_be) {
    const std::string field = std::string(where) + std::string(name);
    const auto found = object.find(std::string(name));
    if (found == object.end()) throw ArchiveError("the manifest has no " + field);
    if (found->type() != type)
        throw ArchiveError("the manifest's " + field + " must be " + std::string(what_it_must_be) + ", not " +
                           found->dump());
    return *found;
}

std::string manifest_string(const nlohmann::json& object, std::string_view where, std::string_view name) {
    return manifest_field(object, where, name, nlohmann::json::value_t::string, "a string").get<std::string>();
}

std::uint64_t manifest_count(const nlohmann::json& object, std::string_view where, std::string_view name) {
    return manifest_field(object, where, name, nlohmann::json::value_t::number_unsigned, "a non-negative integer")
        .get<std::uint64_t>();
}

// max_entry_bytes bounds each entry's listed size, and so the memory its member may take.
std::map<std::string, ManifestItem> parse_manifest(std::span<const std::byte> bytes, std::uint64_t max_entry_bytes) {
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                         reinterpret_cast<const char*>(bytes.data()) + bytes.size());
    } catch (const nlohmann::json::exception& error) {
        throw ArchiveError(std::string("the manifest is not JSON: ") + error.what());
    }
    if (!manifest.is_object()) throw ArchiveError("the manifest is not a JSON object");
    if (const std::string format = manifest_string(manifest, "", "format"); format != archive_format_name)
        throw ArchiveError("not a fa-jit pack archive: its manifest's format is " + nlohmann::json(format).dump());
    if (const auto version = manifest_count(manifest, "", "version"); version != archive_format_version)
        throw ArchiveError("a fa-jit pack archive of version " + std::to_string(version) + "; this fa-jit reads " +
                           std::to_string(archive_format_version));
    if (const auto version = manifest_count(manifest, "", "entry_format_version"); version != entry_format_version)
        throw ArchiveError("the archive holds entries of format version " + std::to_string(version) +
                           "; this fa-jit reads " + std::to_string(entry_format_version));
    const auto& entries = manifest_field(manifest, "", "entries", nlohmann::json::value_t::array, "an array");
    std::map<std::string, ManifestItem> items;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string where = "entries[" + std::to_string(i) + "]";
        const nlohmann::json& item = entries[i];
        if (!item.is_object()) throw ArchiveError("the manifest's " + where + " must be an object, not " + item.dump());
        ManifestItem parsed;
        parsed.arch = manifest_string(item, where + ".", "arch");
        const std::string key_hex = manifest_string(item, where + ".", "key");
        const auto key = Key::from_hex(key_hex);
        if (!key)
            throw ArchiveError("the manifest's " + where + ".key is not a key: " + nlohmann::json(key_hex).dump());
        parsed.key = *key;
        parsed.bytes = manifest_count(item, where + ".", "bytes");
        if (parsed.bytes > max_entry_bytes)
            throw ArchiveError("the manifest's " + where + ".bytes, " + std::to_string(parsed.bytes) +
                               ", is more than the cache's max_bytes (" + std::to_string(max_entry_bytes) + ")");
        if (!items.emplace(member_name(parsed.arch, parsed.key), parsed).second)
            throw ArchiveError("the manifest lists " + member_name(parsed.arch, parsed.key) + " twice");
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

// What is wrong if metadata does not name `arch` as the entry's arch: as the remote tier checks
// a fetched entry, so that a kernel for one arch never lands under another.
std::optional<std::string> arch_mismatch(const nlohmann::json& metadata, const std::string& arch) {
    const auto named = metadata.find("arch");
    if (named != metadata.end() && *named == arch) return std::nullopt;
    return "is listed for arch " + nlohmann::json(arch).dump() + " but its metadata names " +
           (named == metadata.end() ? std::string("none") : named->dump());
}

// A member's name; libarchive gives none for a name it cannot convert (invalid UTF-8, or a
// character this locale lacks), which no member fa-jit writes has.
std::string name_of_member(archive_entry* header, const fs::path& archive_path) {
    const char* name = archive_entry_pathname(header);
    if (!name) throw ArchiveError(archive_path.string() + " has a member whose name cannot be read");
    return name;
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
        if (!decoded.entry || arch_mismatch(decoded.entry->metadata, info.arch)) {
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
    if (!next() || name_of_member(header, archive_path) != manifest_member)
        throw ArchiveError(archive_path.string() + " does not start with a manifest: not a fa-jit pack archive");
    // The manifest is small; anything beyond this is not one fa-jit wrote.
    std::map<std::string, ManifestItem> expected = parse_manifest(
        read_member_data(handle.get(), std::string(manifest_member), 256ull << 20), cache.config().max_bytes);

    // Everything is checked and held in memory before the first entry is stored.
    std::vector<std::pair<ManifestItem, Entry>> verified;
    while (next()) {
        const std::string name = name_of_member(header, archive_path);
        const auto item = expected.find(name);
        if (item == expected.end()) throw ArchiveError(name + " is not in the manifest (or appears twice)");
        const std::vector<std::byte> bytes = read_member_data(handle.get(), name, item->second.bytes);
        if (bytes.size() != item->second.bytes)
            throw ArchiveError(name + " holds " + std::to_string(bytes.size()) + " bytes; the manifest says " +
                               std::to_string(item->second.bytes));
        DecodeResult decoded = decode_entry(bytes);
        if (!decoded.entry) throw ArchiveError(name + " is not a sound entry: " + decoded.error);
        if (const auto wrong = arch_mismatch(decoded.entry->metadata, item->second.arch))
            throw ArchiveError(name + " " + *wrong);
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
