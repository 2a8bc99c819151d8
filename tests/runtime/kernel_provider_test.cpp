// The path spec -> source -> compiler -> cache -> code object, with whichever real
// compiler this machine has (HIPRTC or NVRTC). Skips, saying why, with neither.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cache/entry.hpp"
#include "cache/file_reading.hpp"
#include "cache/layout.hpp"
#include "codegen/template_store.hpp"
#include "fajit/runtime.hpp"
#include "families/registry.hpp"
#include "support/scratch_directory.hpp"

using namespace fajit;

namespace {

// Every directory a test makes lives under one root of this process, removed when the
// tests end, so no other suite or concurrent run shares a cache with these tests.
std::filesystem::path fresh_directory(const std::string& name) {
    static const testing::ScratchDirectory root("fa-jit-provider-test");
    const auto path = root.path / name;
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    return path;
}

// A spec for the first target this machine can compile for, or none.
std::optional<KernelSpec> compilable_spec() {
    Options options;
    options.cache_disabled = true;
    Runtime runtime(options);
    for (const char* arch : {"gfx1151", "sm_90a"}) {
        KernelSpec spec = *parse_spec(std::string("family=scalar,d=64,dtype=f16,arch=") + arch).spec;
        try {
            runtime.prepare(spec);
            return spec;
        } catch (const std::runtime_error& error) {
            MESSAGE("cannot compile for " << arch << ": " << error.what());
        }
    }
    std::printf("skipped: no kernel compiler on this machine\n");
    return std::nullopt;
}

Options options_in(const std::filesystem::path& root) {
    Options options;
    options.cache_dir = root;
    options.log_level = "error";
    return options;
}

}  // namespace

TEST_CASE("a kernel compiles once, then comes from memory, then from disk in a new runtime") {
    const auto spec = compilable_spec();
    if (!spec) return;
    const auto root = fresh_directory("reuse");
    std::string key;
    {
        Runtime runtime(options_in(root));
        const auto first = runtime.prepare(*spec);
        CHECK(first.compiled_now);
        CHECK_FALSE(first.code.empty());
        CHECK(first.lowered_name.find("fa_scalar") != std::string::npos);
        CHECK_FALSE(runtime.prepare(*spec).compiled_now);
        key = first.key;
    }
    Runtime fresh(options_in(root));
    const auto from_disk = fresh.prepare(*spec);
    CHECK_FALSE(from_disk.compiled_now);
    CHECK(from_disk.key == key);
    CHECK(from_disk.compile_seconds > 0.0);  // carried in the entry's metadata
}

TEST_CASE("a kernel the disk cache cannot keep is still returned, with the reason it was not stored") {
    const auto spec = compilable_spec();
    if (!spec) return;
    const auto root = fresh_directory("not-a-directory");
    std::ofstream(root / "plain-file") << "x";
    Runtime unstorable(options_in(root / "plain-file"));
    const auto kernel = unstorable.prepare(*spec);
    CHECK_FALSE(kernel.code.empty());
    CHECK(kernel.store_error == std::errc::not_a_directory);

    Runtime storable(options_in(root / "cache"));
    CHECK_FALSE(storable.prepare(*spec).store_error);
}

TEST_CASE("an entry without a kernel name is replaced by a fresh compile") {
    const auto spec = compilable_spec();
    if (!spec) return;
    const auto root = fresh_directory("no-name");
    std::string key;
    {
        Runtime runtime(options_in(root));
        key = runtime.prepare(*spec).key;
    }
    const auto path = cache::Layout(root).entry_path(spec->arch, *cache::Key::from_hex(key));
    std::error_code error;
    const auto bytes = cache::read_file(path, error, std::filesystem::file_size(path));
    REQUIRE(bytes);
    auto decoded = cache::decode_entry(*bytes);
    REQUIRE(decoded.entry);
    decoded.entry->metadata.erase("lowered_name");
    const auto rewritten = cache::encode_entry(*decoded.entry);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(rewritten.data()), static_cast<std::streamsize>(rewritten.size()));

    Runtime runtime(options_in(root));
    const auto kernel = runtime.prepare(*spec);
    CHECK(kernel.compiled_now);
    CHECK_FALSE(kernel.lowered_name.empty());
}

TEST_CASE("test counters and template overrides compile under keys of their own") {
    const auto spec = compilable_spec();
    if (!spec) return;
    const auto root = fresh_directory("variants");
    Runtime plain(options_in(root));
    const auto base = plain.prepare(*spec);

    Options counting = options_in(root);
    counting.debug_counters = true;
    CHECK(Runtime(counting).prepare(*spec).key != base.key);

    // The override directory gets the embedded templates, plus one local edit to the
    // prelude's common part.
    const auto templates = fresh_directory("templates");
    const TemplateStore embedded;
    const FamilyDescriptor& family = family_of(*spec);
    for (const std::string_view part : family.prelude_parts)
        std::ofstream(templates / part) << embedded.text(part)
                                        << (part == "prelude_common.h" ? "// a local edit\n" : "");
    std::ofstream(templates / family.template_file) << embedded.text(family.template_file);
    Options overridden = options_in(root);
    overridden.template_dir = templates;
    const auto edited = Runtime(overridden).prepare(*spec);
    CHECK(edited.compiled_now);
    CHECK(edited.key != base.key);
}

TEST_CASE("an unwritable cache directory still yields kernels") {
    const auto spec = compilable_spec();
    if (!spec) return;
    // A path below a regular file cannot be created, even by root.
    const auto blocker = fresh_directory("unwritable") / "file";
    std::ofstream(blocker) << "not a directory";
    Runtime runtime(options_in(blocker / "cache"));
    const auto kernel = runtime.prepare(*spec);
    CHECK(kernel.compiled_now);
    CHECK_FALSE(kernel.code.empty());
    CHECK_FALSE(std::filesystem::exists(blocker / "cache"));
}
