// The variant table: which family and tiles each arch class and shape class gets, and how
// FAJIT_FAMILY, FAJIT_FORCE_FALLBACK and FAJIT_TILE change that. Pure host code.
#include <doctest/doctest.h>

#include <set>

#include "dispatch/variant_table.hpp"
#include "families/registry.hpp"
#include "spec/arch.hpp"

using namespace fajit;

namespace {

ShapeClass shape(int head_dim, DType dtype = DType::f16, QueryLength length = QueryLength::large,
                 CausalMode causal = CausalMode::bottom_right) {
    return {.head_dim = head_dim, .dtype = dtype, .causal = causal, .query_length = length};
}

Options defaults() { return Options{}; }

void check_tile(const KernelSpec& spec, int block_q, int block_k, int waves) {
    CHECK_MESSAGE(spec.block_q == block_q, to_string(spec));
    CHECK_MESSAGE(spec.block_k == block_k, to_string(spec));
    CHECK_MESSAGE(spec.waves == waves, to_string(spec));
}

}  // namespace

TEST_CASE(
    "the table tries the decode families first, prefers wmma-gfx11 on gfx11 and mfma-gfx9 on CDNA, and ends with "
    "scalar for any arch") {
    const auto table = variant_table();
    REQUIRE(table.size() >= 5);
    CHECK(table[0].family->name == "decode-mma");
    CHECK(table[1].family->name == "decode-split");
    CHECK(table[2].family->name == "wmma-gfx11");
    CHECK(table[2].arch_class == "gfx11");
    CHECK(table[3].family->name == "mfma-gfx9");
    CHECK(table[3].offered_on("gfx942:sramecc+:xnack-"));
    CHECK_FALSE(table[3].offered_on("sm_90a"));  // its emulation runs only when asked for
    CHECK_FALSE(table[3].offered_on("gfx908"));  // no bf16_1k MFMA
    CHECK(table.back().family->name == "scalar");
    CHECK(&fallback_family() == table.back().family);
    for (const char* arch : {"gfx1151", "gfx942:sramecc+:xnack-", "sm_90a", "sm_75"})
        CHECK(table.back().offered_on(arch));
}

TEST_CASE("gfx11: wmma-gfx11 with tiles by head dim and query length, for f16 and bf16") {
    for (const char* arch : {"gfx1151", "gfx1100", "gfx1101"})
        for (DType dtype : {DType::f16, DType::bf16})
            for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right}) {
                CAPTURE(arch);
                for (int d : {64, 80, 96, 128}) {
                    const auto large = select_variant(arch, shape(d, dtype, QueryLength::large, causal), defaults());
                    CHECK(large.spec.family == "wmma-gfx11");
                    CHECK(large.fallback_reason.empty());
                    check_tile(large.spec, 64, 64, 4);
                    check_tile(select_variant(arch, shape(d, dtype, QueryLength::small, causal), defaults()).spec, 32,
                               64, 2);
                    check_tile(select_variant(arch, shape(d, dtype, QueryLength::decode, causal), defaults()).spec, 16,
                               64, 1);
                }
                const auto d256 = select_variant(arch, shape(256, dtype, QueryLength::large, causal), defaults());
                CHECK(d256.spec.family == "wmma-gfx11");
                check_tile(d256.spec, 32, 32, 2);
                check_tile(select_variant(arch, shape(256, dtype, QueryLength::decode, causal), defaults()).spec, 16,
                           32, 1);
            }
}

TEST_CASE("gfx11: the model features halve the key step where they would spill (tools/tiles/wmma_gfx11.md)") {
    const auto with = [](int head_dim, bool window, bool softcap, bool sinks) {
        ShapeClass featured = shape(head_dim);
        featured.window = window;
        featured.softcap = softcap;
        featured.sinks = sinks;
        return select_variant("gfx1151", featured, defaults()).spec;
    };
    check_tile(with(80, false, false, false), 64, 64, 4);
    check_tile(with(80, false, true, false), 64, 32, 4);
    check_tile(with(96, true, true, true), 64, 64, 4);  // fits in 256 VGPRs with 64 keys
    check_tile(with(112, false, false, false), 64, 32, 4);
    check_tile(with(112, true, false, false), 64, 16, 4);
    check_tile(with(112, false, true, true), 64, 32, 4);
    check_tile(with(128, true, true, true), 64, 64, 4);
    check_tile(with(160, false, false, true), 32, 16, 2);
    check_tile(with(160, false, true, false), 32, 16, 2);  // a soft-cap alone spilled one VGPR in bf16
    check_tile(with(160, true, true, false), 32, 32, 2);   // with a window it fits at 32 keys
    check_tile(with(256, false, true, false), 32, 32, 2);  // Gemma 2's soft-capped 256 keeps its step
}

TEST_CASE("gfx11: pages of one 64-key step at head dim 64 halve the step, where 64 keys spilled") {
    const auto paged = [](int head_dim, int page_size, bool softcap) {
        ShapeClass call = shape(head_dim, DType::bf16, QueryLength::large, CausalMode::bottom_right);
        call.kv_layout = KvLayout::paged;
        call.page_size = page_size;
        call.softcap = softcap;
        return select_variant("gfx1151", call, defaults()).spec;
    };
    check_tile(paged(64, 64, false), 64, 32, 4);
    check_tile(paged(56, 64, false), 64, 32, 4);   // padded to 64 as well
    check_tile(paged(64, 16, false), 64, 64, 4);   // 249 VGPRs
    check_tile(paged(64, 256, false), 64, 64, 4);  // 247
    check_tile(paged(64, 64, true), 64, 64, 4);    // the soft-cap's fixed frame: 214
    check_tile(paged(96, 64, false), 64, 64, 4);
}

TEST_CASE("gfx11: a soft-cap over paged K/V at padded head dim 112 halves the step, where 32 keys spilled") {
    const auto capped = [](int head_dim, KvLayout layout) {
        ShapeClass call = shape(head_dim, DType::bf16, QueryLength::large, CausalMode::bottom_right);
        call.kv_layout = layout;
        call.page_size = layout == KvLayout::paged ? 16 : 0;
        call.softcap = true;
        return select_variant("gfx1151", call, defaults()).spec;
    };
    check_tile(capped(112, KvLayout::paged), 64, 16, 4);
    check_tile(capped(104, KvLayout::paged), 64, 16, 4);  // padded to 112 as well
    check_tile(capped(112, KvLayout::ragged), 64, 32, 4);
    check_tile(capped(112, KvLayout::dense), 64, 32, 4);
    check_tile(capped(128, KvLayout::paged), 64, 64, 4);
}

TEST_CASE("a window over ragged K/V takes smaller tiles where the full ones spilled") {
    const auto windowed = [](const char* arch, int head_dim, KvLayout layout, CausalMode causal) {
        ShapeClass call = shape(head_dim, DType::f16, QueryLength::large, causal);
        call.kv_layout = layout;
        call.window = true;
        return select_variant(arch, call, defaults()).spec;
    };
    // gfx11 halves the key step at padded 64 and at 208.
    for (const CausalMode causal : {CausalMode::none, CausalMode::bottom_right}) {
        CAPTURE(causal);
        check_tile(windowed("gfx1151", 64, KvLayout::ragged, causal), 64, 32, 4);
        check_tile(windowed("gfx1151", 56, KvLayout::ragged, causal), 64, 32, 4);  // padded to 64 as well
        check_tile(windowed("gfx1151", 208, KvLayout::ragged, causal), 32, 16, 2);
        check_tile(windowed("gfx1151", 200, KvLayout::ragged, causal), 32, 16, 2);  // padded to 208 as well
    }
    check_tile(windowed("gfx1151", 64, KvLayout::dense, CausalMode::bottom_right), 64, 64, 4);
    check_tile(windowed("gfx1151", 192, KvLayout::ragged, CausalMode::bottom_right), 32, 32, 2);
    ShapeClass capped = shape(208, DType::bf16, QueryLength::large, CausalMode::bottom_right);
    capped.kv_layout = KvLayout::ragged;
    capped.window = capped.softcap = true;
    check_tile(select_variant("gfx1151", capped, defaults()).spec, 32, 32, 2);  // 16 keys spilled with a soft-cap
    // mma-sm80 keeps one 16-row tile per warp at padded 96.
    check_tile(windowed("sm_80", 96, KvLayout::ragged, CausalMode::bottom_right), 64, 64, 4);
    check_tile(windowed("sm_80", 88, KvLayout::ragged, CausalMode::bottom_right), 64, 64, 4);
    check_tile(windowed("sm_80", 96, KvLayout::dense, CausalMode::bottom_right), 128, 64, 4);
    check_tile(windowed("sm_80", 80, KvLayout::ragged, CausalMode::bottom_right), 128, 64, 4);
}

TEST_CASE("gfx11: a V head dim of its own takes its measured key step where the full one spilled") {
    const auto pair = [](int head_dim, int head_dim_v, KvLayout layout, bool every_feature) {
        ShapeClass call = shape(head_dim, DType::bf16, QueryLength::large, CausalMode::bottom_right);
        call.head_dim_v = head_dim_v;
        call.kv_layout = layout;
        call.page_size = layout == KvLayout::paged ? 1 : 0;
        call.window = call.softcap = call.sinks = every_feature;
        return select_variant("gfx1151", call, defaults()).spec;
    };
    // Q in registers.
    check_tile(pair(64, 96, KvLayout::dense, false), 64, 32, 4);
    check_tile(pair(64, 128, KvLayout::ragged, true), 64, 32, 4);
    check_tile(pair(64, 128, KvLayout::ragged, false), 64, 64, 4);
    check_tile(pair(96, 64, KvLayout::dense, true), 64, 32, 4);
    check_tile(pair(96, 64, KvLayout::dense, false), 64, 64, 4);
    check_tile(pair(96, 128, KvLayout::dense, false), 64, 16, 4);  // 32 keys spilled as well
    check_tile(pair(88, 128, KvLayout::paged, false), 64, 16, 4);  // padded to 96 as well
    // Q of 96 with O of 160 keeps 32 keys with every feature: 16 spilled.
    check_tile(pair(96, 160, KvLayout::ragged, true), 64, 32, 4);
    // Q staged.
    check_tile(pair(128, 160, KvLayout::dense, false), 32, 16, 2);
    check_tile(pair(128, 200, KvLayout::paged, false), 32, 16, 2);  // one-key pages
    check_tile(pair(128, 200, KvLayout::paged, true), 32, 32, 2);
    check_tile(pair(96, 200, KvLayout::paged, true), 32, 16, 2);
    check_tile(pair(96, 200, KvLayout::ragged, true), 32, 32, 2);
    check_tile(pair(160, 128, KvLayout::ragged, true), 32, 16, 2);
    // MLA's 192/128 takes the step of its wider head dim in every layout.
    check_tile(pair(192, 128, KvLayout::ragged, false), 32, 32, 2);
    check_tile(pair(192, 128, KvLayout::paged, false), 32, 32, 2);
}

TEST_CASE("gfx11: f32 falls back to scalar, saying why; every head dim runs on WMMA") {
    const auto f32 = select_variant("gfx1151", shape(128, DType::f32), defaults());
    CHECK(f32.spec.family == "scalar");
    CHECK_FALSE(f32.forced);
    CHECK(f32.fallback_reason.find("wmma-gfx11") != std::string::npos);
    CHECK(f32.fallback_reason.find("dtype=f32") != std::string::npos);

    // Every head dim the spec allows runs on WMMA, padded to 16 inside the kernel.
    for (const int head_dim : {16, 24, 72, 200, 248}) {
        CAPTURE(head_dim);
        const auto selected = select_variant("gfx1151", shape(head_dim), defaults());
        CHECK(selected.spec.family == "wmma-gfx11");
        CHECK(selected.fallback_reason == "");
    }
}

TEST_CASE("NVIDIA sm_90a: wgmma-sm90 with its measured tile table at every head dim, yielding where it cannot run") {
    const auto hopper = select_variant("sm_90a", shape(128), defaults());
    CHECK(hopper.spec.family == "wgmma-sm90");
    CHECK(hopper.fallback_reason.empty());
    check_tile(hopper.spec, 128, 128, 8);
    check_tile(select_variant("sm_90a", shape(256), defaults()).spec, 128, 64, 8);
    check_tile(select_variant("sm_90a", shape(64, DType::bf16, QueryLength::decode), defaults()).spec, 128, 128, 8);

    // Every head dim runs on wgmma, staged in whole 64-column blocks: 64-key steps once
    // the staged dims pass 128 (the registers rule of src/families/wgmma_sm90.cpp).
    for (const int head_dim : {16, 24, 72, 80, 112, 120, 160, 192, 248}) {
        CAPTURE(head_dim);
        const auto selected = select_variant("sm_90a", shape(head_dim), defaults());
        CHECK(selected.spec.family == "wgmma-sm90");
        CHECK(selected.fallback_reason.empty());
        check_tile(selected.spec, 128, head_dim > 128 ? 64 : 128, 8);
    }

    // Neither tensor-core family runs f32; the reason names both refusals.
    const auto f32 = select_variant("sm_90a", shape(128, DType::f32), defaults());
    CHECK(f32.spec.family == "scalar");
    CHECK(f32.fallback_reason.find("wgmma-sm90") != std::string::npos);
    CHECK(f32.fallback_reason.find("mma-sm80") != std::string::npos);
    CHECK(f32.fallback_reason.find("dtype=f32") != std::string::npos);
}

TEST_CASE("NVIDIA sm_80 and newer without wgmma: mma-sm80 with the measured tile table") {
    for (const char* arch : {"sm_80", "sm_86", "sm_90", "sm_120"}) {
        CAPTURE(arch);
        CHECK(select_variant(arch, shape(128), defaults()).spec.family == "mma-sm80");
    }
    check_tile(select_variant("sm_90", shape(128), defaults()).spec, 128, 128, 8);  // an sm_90's shared memory
    check_tile(select_variant("sm_80", shape(128), defaults()).spec, 128, 32, 4);
    check_tile(select_variant("sm_80", shape(64, DType::bf16, QueryLength::decode), defaults()).spec, 128, 64, 4);

    // Head dims between the measured ones take the next one's tiles, padded to 16 inside
    // the kernel: every head dim the spec allows runs on tensor cores.
    for (const int head_dim : {16, 24, 72, 112, 120, 200, 248}) {
        CAPTURE(head_dim);
        const auto selected = select_variant("sm_80", shape(head_dim), defaults());
        CHECK(selected.spec.family == "mma-sm80");
        CHECK(selected.fallback_reason == "");
    }
    check_tile(select_variant("sm_80", shape(112), defaults()).spec, 128, 32, 4);  // 32 rows x (112 + 32)
    check_tile(select_variant("sm_90a", shape(200), defaults()).spec, 128, 64, 8);
}

TEST_CASE("older NVIDIA and AMD archs with no matrix-core family: scalar, with no fallback to report") {
    for (const char* arch : {"sm_75", "gfx1030", "gfx908"}) {
        CAPTURE(arch);
        const auto selection = select_variant(arch, shape(128), defaults());
        CHECK(selection.spec.family == "scalar");
        CHECK(selection.fallback_reason.empty());
        CHECK(selection.spec.rescale_margin == 10.0f);
        CHECK(selection.spec.arch == arch);
    }
}

TEST_CASE("CDNA (gfx90a, gfx94x): mfma-gfx9 at every head dim, 64-key steps where K and V^T fit in 64 KiB") {
    for (const char* arch : {"gfx942:sramecc+:xnack-", "gfx90a:sramecc+:xnack-", "gfx940", "gfx941"})
        for (const int head_dim : {16, 24, 64, 80, 96, 112, 128, 184, 256}) {
            CAPTURE(arch);
            CAPTURE(head_dim);
            const auto selection = select_variant(arch, shape(head_dim), defaults());
            CHECK(selection.spec.family == "mfma-gfx9");
            CHECK(selection.fallback_reason.empty());
        }
    check_tile(select_variant("gfx942:sramecc+:xnack-", shape(128), defaults()).spec, 64, 64, 4);
    check_tile(select_variant("gfx942:sramecc+:xnack-", shape(224), defaults()).spec, 64, 64, 4);
    check_tile(select_variant("gfx942:sramecc+:xnack-", shape(232), defaults()).spec, 64, 32, 4);
    check_tile(select_variant("gfx90a", shape(128, DType::f16, QueryLength::small), defaults()).spec, 32, 64, 2);
    // f32 has no MFMA here: scalar, reported as the fallback it is.
    const auto f32 = select_variant("gfx942:sramecc+:xnack-", shape(128, DType::f32), defaults());
    CHECK(f32.spec.family == "scalar");
    CHECK(f32.fallback_reason.find("mfma-gfx9") != std::string::npos);
}

TEST_CASE("scalar tiles: one-wave blocks and longer key steps for decode; wave size sets the key step") {
    Options scalar;
    scalar.family = "scalar";
    check_tile(select_variant("sm_75", shape(128), defaults()).spec, 4, 64, 4);
    check_tile(select_variant("sm_75", shape(128, DType::f16, QueryLength::small), defaults()).spec, 4, 64, 4);
    check_tile(select_variant("sm_75", shape(128, DType::f16, QueryLength::decode), defaults()).spec, 1, 128, 1);
    check_tile(select_variant("gfx942:sramecc+:xnack-", shape(64), scalar).spec, 4, 128, 4);
    check_tile(select_variant("gfx942:sramecc+:xnack-", shape(64, DType::bf16, QueryLength::decode), scalar).spec, 1,
               256, 1);
}

TEST_CASE("every selection, over all supported shapes and several archs, is a valid spec") {
    int checked = 0;
    for (const char* arch : {"gfx1151", "gfx942:sramecc+:xnack-", "gfx90a", "sm_90a", "sm_90", "sm_80"})
        for (int d = 16; d <= 256; d += 8)
            for (DType dtype : {DType::f16, DType::bf16, DType::f32})
                for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
                    for (QueryLength length : {QueryLength::decode, QueryLength::small, QueryLength::large}) {
                        const auto spec = select_variant(arch, shape(d, dtype, length, causal), defaults()).spec;
                        CHECK_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
                        CHECK(spec.head_dim == d);
                        CHECK(spec.dtype == dtype);
                        CHECK(spec.causal == causal);
                        ++checked;
                    }
    CHECK(checked == 6 * 31 * 3 * 3 * 3);
}

TEST_CASE("FAJIT_FAMILY forces a family: wmma-gfx11 runs emulated on NVIDIA, and falls back where it cannot run") {
    Options options;
    options.family = "wmma-gfx11";
    const auto emulated = select_variant("sm_90a", shape(128), options);
    CHECK(emulated.spec.family == "wmma-gfx11");
    CHECK(emulated.fallback_reason.empty());

    const auto cdna = select_variant("gfx942:sramecc+:xnack-", shape(128), options);
    CHECK(cdna.spec.family == "scalar");
    CHECK(cdna.fallback_reason.find("arch=gfx942") != std::string::npos);

    options.family = "scalar";
    const auto scalar = select_variant("gfx1151", shape(128), options);
    CHECK(scalar.spec.family == "scalar");
    CHECK(scalar.fallback_reason.empty());
}

TEST_CASE("FAJIT_FORCE_FALLBACK chooses scalar and marks it as asked for") {
    Options options;
    options.force_fallback = true;
    options.family = "wmma-gfx11";
    const auto selection = select_variant("gfx1151", shape(128), options);
    CHECK(selection.spec.family == "scalar");
    CHECK(selection.forced);
    CHECK(selection.fallback_reason.find("FAJIT_FORCE_FALLBACK") != std::string::npos);
}

TEST_CASE("FAJIT_TILE pins the preferred variant's tiles, refuses ones that do not fit, and spares fallbacks") {
    Options options;
    options.tile = {32, 32, 2};
    check_tile(select_variant("gfx1151", shape(128), options).spec, 32, 32, 2);

    options.tile = {std::nullopt, 128, std::nullopt};
    check_tile(select_variant("gfx1151", shape(64), options).spec, 64, 128, 4);

    options.tile = {8, std::nullopt, 2};
    check_tile(select_variant("sm_75", shape(128), options).spec, 8, 64, 2);
    options.tile = {64, 64, 4};
    check_tile(select_variant("sm_90a", shape(128), options).spec, 64, 64, 4);

    options.tile = {48, std::nullopt, std::nullopt};
    CHECK_THROWS_WITH_AS(select_variant("gfx1151", shape(128), options), doctest::Contains("FAJIT_TILE=bq=48"),
                         InvalidOption);

    // f32 falls back to scalar, which keeps its own tiles rather than the pin meant for wmma-gfx11.
    options.tile = {64, 64, 4};
    check_tile(select_variant("gfx1151", shape(128, DType::f32), options).spec, 4, 64, 4);
}

TEST_CASE("query length classes and dispatch keys") {
    CHECK(classify_query_length(1) == QueryLength::decode);
    CHECK(classify_query_length(4) == QueryLength::decode);
    CHECK(classify_query_length(5) == QueryLength::small);
    CHECK(classify_query_length(64) == QueryLength::small);
    CHECK(classify_query_length(65) == QueryLength::large);
    CHECK(classify_query_length(1 << 30) == QueryLength::large);

    std::set<std::uint64_t> keys;
    int inputs = 0;
    for (int device : {0, 1, 7})
        for (int d = 16; d <= 256; d += 8)
            for (DType dtype : {DType::f16, DType::bf16, DType::f32})
                for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
                    for (QueryLength length : {QueryLength::decode, QueryLength::small, QueryLength::large})
                        for (int features = 0; features < 8; ++features) {
                            ShapeClass one = shape(d, dtype, length, causal);
                            one.window = features & 1;
                            one.softcap = features & 2;
                            one.sinks = features & 4;
                            keys.insert(dispatch_key(device, one));
                            ++inputs;
                        }
    CHECK(keys.size() == static_cast<std::size_t>(inputs));
}

TEST_CASE(
    "decode shapes of up to 16 rows per KV head go to a decode family on every arch, of 32 to decode-mma; others pass "
    "them by") {
    for (const char* arch : {"gfx1151", "gfx942:sramecc+:xnack-", "sm_75", "sm_80", "sm_90a"}) {
        INFO(arch);
        // Tensor cores from sm_80; elsewhere a tile of just the rows needed.
        const bool tensor_cores = vendor_of(arch) == Vendor::nvidia && sm_version(arch) >= 80;
        const std::string family = tensor_cores ? "decode-mma" : "decode-split";
        ShapeClass decode = shape(128, DType::bf16, QueryLength::decode);
        decode.decode_rows = classify_decode_rows(1, 32, 8);
        const Selection chosen = select_variant(arch, decode, defaults());
        CHECK(chosen.spec.family == family);
        CHECK(chosen.spec.block_q == (tensor_cores ? 16 : 4));
        CHECK(chosen.fallback_reason == "");
        // A head dim no multiple of 16 too: decode-mma pads it inside the kernel.
        ShapeClass odd = decode;
        odd.head_dim = 72;
        CHECK(select_variant(arch, odd, defaults()).spec.family == family);
        // A prefill shape, and a decode shape with too many rows, never reach it, and passing
        // it over is no fallback.
        for (ShapeClass other : {shape(128, DType::bf16), shape(128, DType::bf16, QueryLength::small)}) {
            other.decode_rows = classify_decode_rows(9, 32, 8);
            const Selection prefill = select_variant(arch, other, defaults());
            CHECK(prefill.spec.family != "decode-split");
            CHECK(prefill.spec.family != "decode-mma");
        }
        // 17 to 32 rows (a speculative step of 4 query rows of a GQA group of 8): decode-mma
        // with two row tiles where its accumulators fit, else a prefill family, and neither is
        // a fallback.
        ShapeClass wide = decode;
        wide.decode_rows = classify_decode_rows(4, 64, 8);
        const Selection two_tiles = select_variant(arch, wide, defaults());
        CHECK(two_tiles.spec.family != "decode-split");
        CHECK((two_tiles.spec.family == "decode-mma") == tensor_cores);
        if (tensor_cores) CHECK(two_tiles.spec.block_q == 32);
        CHECK(two_tiles.fallback_reason == "");
        wide.head_dim = 256;
        const Selection too_wide = select_variant(arch, wide, defaults());
        CHECK(too_wide.spec.family != "decode-mma");
        if (std::string_view(arch) != "sm_75") CHECK(too_wide.spec.family != "scalar");  // no matrix cores there
        CHECK(too_wide.fallback_reason == "");
        // f32 is not among its dtypes: the shape goes on down the table.
        ShapeClass f32 = shape(128, DType::f32, QueryLength::decode);
        f32.decode_rows = 4;
        CHECK(select_variant(arch, f32, defaults()).spec.family == "scalar");
    }
    AttentionArgs call;
    call.len_q = 1;
    call.heads_q = 32;
    call.heads_kv = 8;
    CHECK(classify(call).decode_rows == 4);
    call.len_q = 2048;
    CHECK(classify(call).decode_rows == 0);
    CHECK(classify_decode_rows(1, 32, 8) == 4);
    CHECK(classify_decode_rows(3, 32, 8) == 16);
    CHECK(classify_decode_rows(4, 64, 8) == 32);
    CHECK(classify_decode_rows(5, 64, 8) == 0);  // 40 pairs
    CHECK(classify_decode_rows(16, 8, 8) == 16);
    CHECK(classify_decode_rows(17, 8, 8) == 32);
    CHECK(classify_decode_rows(33, 8, 8) == 0);
}

TEST_CASE("FAJIT_FAMILY=decode-split on a prefill shape says why it runs the fallback") {
    Options options;
    options.family = "decode-split";
    const Selection chosen = select_variant("sm_90a", shape(128), options);
    CHECK(chosen.spec.family == "scalar");
    CHECK(chosen.fallback_reason.find("decode-split cannot run it") != std::string::npos);
}

TEST_CASE("the decode split plan fills the device when batch x KV heads cannot, and pins on request") {
    const FamilyDescriptor* decode = find_family("decode-split");
    REQUIRE(decode);
    REQUIRE(decode->plan_splits);
    KernelSpec spec;
    spec.family = "decode-split";
    spec.arch = "sm_90a";
    spec.head_dim = 128;
    spec.block_q = 4;
    AttentionArgs args;
    args.heads_kv = 8;
    args.len_k = 32768;
    args.batch = 1;
    const SplitPlan one = decode->plan_splits(spec, args, 132, 0);
    CHECK(one.num_splits > 16);  // 8 blocks alone would leave most of 132 SMs idle
    CHECK(one.num_splits <= 64);
    CHECK(one.partial_floats == std::size_t(8) * one.num_splits * 4 * (128 + 2));
    CHECK(one.arrival_counters == 8);
    args.batch = 128;
    CHECK(decode->plan_splits(spec, args, 132, 0).num_splits == 1);  // 1024 blocks fill it
    args.len_k = 100;
    args.batch = 1;
    CHECK(decode->plan_splits(spec, args, 132, 0).num_splits == 1);  // too few keys to split
    const SplitPlan pinned = decode->plan_splits(spec, args, 132, 5);
    CHECK(pinned.num_splits == 5);
    CHECK(pinned.arrival_counters == 8);
}

TEST_CASE("decode-mma splits to one wave of the blocks an SM holds at once") {
    const FamilyDescriptor* decode = find_family("decode-mma");
    REQUIRE(decode);
    const auto spec_of = [](int head_dim) {
        KernelSpec spec;
        spec.family = "decode-mma";
        spec.head_dim = head_dim;
        spec.arch = "sm_90a";
        return with_family_defaults(spec);
    };
    KernelSpec spec = spec_of(128);
    AttentionArgs args;
    args.heads_kv = 8;
    args.len_k = 8192;
    args.batch = 16;
    // 128 pairs; the family's 8 warps at d=128 take over half an SM's shared memory with
    // their two stages: 132 slots, so one split.
    CHECK(decode->plan_splits(spec, args, 132, 0).num_splits == 1);
    // Pinned to 4 warps, two blocks per SM (their registers allow no third): 264 slots
    // take 2 splits, not a third part-wave.
    KernelSpec four_warps = spec;
    four_warps.waves = 4;
    CHECK(decode->plan_splits(four_warps, args, 132, 0).num_splits == 2);
    spec = spec_of(256);
    // d=256 buffers take over 113 KiB: one block per SM, so 128 blocks are a wave.
    CHECK(decode->plan_splits(spec, args, 132, 0).num_splits == 1);
    args.batch = 1;
    CHECK(decode->plan_splits(spec, args, 132, 0).num_splits == 16);        // 8 pairs x 16 splits on 132 SMs
    CHECK(decode->plan_splits(four_warps, args, 132, 0).num_splits == 32);  // 264 slots, but splits of 256 keys
}

TEST_CASE("between one wave and three, decode-mma splits until the last wave is at least a third full") {
    const FamilyDescriptor* decode = find_family("decode-mma");
    REQUIRE(decode);
    KernelSpec spec;
    spec.family = "decode-mma";
    spec.head_dim = 128;
    spec.arch = "sm_90a";
    spec = with_family_defaults(spec);  // one block an SM: 132 slots
    AttentionArgs args;
    args.heads_kv = 8;
    args.len_k = 32768;
    const auto splits_at = [&](int batch) {
        args.batch = batch;
        return decode->plan_splits(spec, args, 132, 0).num_splits;
    };
    CHECK(splits_at(20) == 2);  // 160 pairs leave 28 in a second wave; 320 leave 56
    CHECK(splits_at(24) == 1);  // 192 pairs leave 60
    CHECK(splits_at(33) == 1);  // 264 pairs are two full waves
    CHECK(splits_at(40) == 1);  // 320 pairs leave 56
    CHECK(splits_at(50) == 1);  // 400 pairs make three waves or more: not split for the last
    CHECK(splits_at(18) == 4);  // 144 pairs: 12, 24, 36, then 48 of 132
    CHECK(splits_at(17) == 4);  // 136 pairs: no count to 4 reaches a third; 4 leaves the most
    args.len_k = 512;           // two splits of 256 keys at most
    CHECK(splits_at(18) == 2);
    args.len_k = 256;
    CHECK(splits_at(20) == 1);
    CHECK(decode->plan_splits(spec, args, 132, 3).num_splits == 3);  // a pinned count stands
}

TEST_CASE("a V head dim of its own runs on each arch's tensor-core families, decode included") {
    ShapeClass mla = shape(192, DType::bf16);
    mla.head_dim_v = 128;
    // DeepSeek's MLA prefill on Hopper: wgmma, with the 128-key steps a staged dv of 128 allows.
    const auto hopper = select_variant("sm_90a", mla, defaults());
    CHECK(hopper.spec.family == "wgmma-sm90");
    CHECK(hopper.spec.head_dim_v == 128);
    CHECK(hopper.fallback_reason.empty());
    check_tile(hopper.spec, 128, 128, 8);
    CHECK(select_variant("sm_80", mla, defaults()).spec.family == "mma-sm80");
    // Past a staged d of 192, two stages of 128 keys and Q no longer fit in shared memory
    // beside V's rows of 72 to 128 dims: wgmma takes 64-key steps rather than yielding to mma-sm80.
    for (const int head_dim : {200, 256}) {
        for (const int head_dim_v : {72, 128}) {
            CAPTURE(head_dim);
            CAPTURE(head_dim_v);
            ShapeClass wide_keys = shape(head_dim);
            wide_keys.head_dim_v = head_dim_v;
            const auto selected = select_variant("sm_90a", wide_keys, defaults());
            CHECK(selected.spec.family == "wgmma-sm90");
            CHECK(selected.fallback_reason.empty());
            check_tile(selected.spec, 128, 64, 8);
        }
    }
    // A window with V wider than Q and K past 128 takes one warpgroup in every layout (two
    // spilled); where Q and K are as wide, or without a window, two warpgroups of 64-key steps.
    ShapeClass windowed_wide_values = shape(64);
    windowed_wide_values.head_dim_v = 256;
    windowed_wide_values.kv_layout = KvLayout::ragged;
    windowed_wide_values.window = true;
    check_tile(select_variant("sm_90a", windowed_wide_values, defaults()).spec, 64, 64, 4);
    windowed_wide_values.head_dim = 256;
    windowed_wide_values.head_dim_v = 0;  // a dv equal to d is given as none
    check_tile(select_variant("sm_90a", windowed_wide_values, defaults()).spec, 128, 64, 8);
    windowed_wide_values.head_dim = 64;
    windowed_wide_values.head_dim_v = 256;
    windowed_wide_values.kv_layout = KvLayout::paged;
    windowed_wide_values.page_size = 16;
    check_tile(select_variant("sm_90a", windowed_wide_values, defaults()).spec, 64, 64, 4);
    windowed_wide_values.window = false;
    check_tile(select_variant("sm_90a", windowed_wide_values, defaults()).spec, 128, 64, 8);

    ShapeClass decode = mla;
    decode.query_length = QueryLength::decode;
    decode.decode_rows = 4;
    const auto decoded = select_variant("sm_90a", decode, defaults());
    CHECK(decoded.spec.family == "decode-mma");
    CHECK(decoded.spec.head_dim_v == 128);
    CHECK(decoded.fallback_reason.empty());
    CHECK(select_variant("gfx1151", decode, defaults()).spec.family == "decode-split");

    // On gfx11, WMMA; with Q in LDS past 128 head dims, two waves of 32-key steps.
    const auto gfx11 = select_variant("gfx1151", mla, defaults());
    CHECK(gfx11.spec.family == "wmma-gfx11");
    CHECK(gfx11.spec.head_dim_v == 128);
    CHECK(gfx11.fallback_reason.empty());
    check_tile(gfx11.spec, 32, 32, 2);
    ShapeClass wide_values = shape(64);
    wide_values.head_dim_v = 256;  // Q of 64 dims stays in registers; O's 128 VGPRs take 32-key steps
    check_tile(select_variant("gfx1151", wide_values, defaults()).spec, 64, 32, 4);
    wide_values.head_dim = 96;  // Q's and O's registers past d = dv = 128's: Q in LDS, as at d=256
    check_tile(select_variant("gfx1151", wide_values, defaults()).spec, 32, 32, 2);
}
