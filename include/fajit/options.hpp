#pragma once
// Every setting of fa-jit, in one place. Programs fill it from their arguments; the
// library fills what they leave unset from FAJIT_* environment variables.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fajit/kernel_spec.hpp"

namespace fajit {

// A setting (FAJIT_* variable or override) that is malformed, unknown or does not fit;
// the message names the setting and its value.
class InvalidOption : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Tile sizes pinned by the user; unset fields keep what the variant table chose.
struct TilePin {
    std::optional<int> block_q;  // bq
    std::optional<int> block_k;  // bk
    std::optional<int> waves;    // waves

    bool empty() const { return !block_q && !block_k && !waves; }
    bool operator==(const TilePin&) const = default;
};

struct Options {
    // Where compiled kernels are kept: FAJIT_CACHE_DIR, else $XDG_CACHE_HOME/fa-jit,
    // else $HOME/.cache/fa-jit. Empty when none of them is set: memory only.
    std::filesystem::path cache_dir;
    std::uint64_t cache_max_bytes = 2ull << 30;  // FAJIT_CACHE_MAX_SIZE, bytes or with K/M/G suffix
    bool cache_disabled = false;                 // FAJIT_CACHE_DISABLE=1
    std::filesystem::path template_dir;          // FAJIT_TEMPLATE_DIR: read templates from here
    // FAJIT_MAX_LOADED_KERNELS: kernels a Runtime keeps loaded (and their code objects in
    // memory); past it the least recently used is unloaded, and loaded again from the disk
    // cache when next needed. At least 1.
    std::size_t max_loaded_kernels = 256;
    std::string log_level = "warn";  // FAJIT_LOG_LEVEL: trace, debug, info, warn, error, off
    // FAJIT_DEBUG_COUNTERS=1 compiles the kernels' test counters in (see
    // AttentionArgs::debug_counters). Such kernels are cached under their own keys.
    bool debug_counters = false;

    // Variant selection. The table these override is in src/dispatch/variant_table.cpp.
    // FAJIT_FAMILY=<family name> runs that family whatever the table prefers (wmma-gfx11
    // and mfma-gfx9 run on NVIDIA through their emulations); auto or unset follows the table.
    std::optional<std::string> family;
    bool force_fallback = false;  // FAJIT_FORCE_FALLBACK=1: always run the scalar family
    TilePin tile;                 // FAJIT_TILE=bq=64,bk=64,waves=4: tiles of the selected variant
    // FAJIT_STRICT=1: running scalar instead of the selected variant (unsupported shape,
    // failed compile or load) is an error rather than a warning. FAJIT_FORCE_FALLBACK stays allowed.
    bool strict = false;
    // FAJIT_CHECK_INDICES (default on): a batched call's cu_seqlens, kv_lens and block table
    // are read back and checked before the launch, which waits for the stream. Off trusts
    // them, as CUDA graph capture needs; kernels still clamp offsets, lengths and pages to
    // the tensors, so a bad index gives a wrong sequence but touches no other memory.
    bool check_indices = true;
    // FAJIT_DECODE_SPLITS: the split count of every split-KV decode launch (1..64); 0 (the
    // default) plans it per call from the batch, KV heads, keys and compute units. A
    // pinned count keeps a captured CUDA graph's grid and workspace right at any length.
    int decode_splits = 0;
    // FAJIT_TENSOR_MAPS (default on): families that can (wgmma-sm90) copy dense calls'
    // Q, K and V through tensor maps (TMA). Off: they copy as for the batched layouts,
    // for A/B measurements, or a driver whose tensor maps misbehave.
    bool tensor_maps = true;
    // FAJIT_PROGRAMMATIC_LAUNCH (default on): on sm_90 and later, each kernel is launched as
    // a programmatic dependent of the kernel before it in the stream, so that its blocks are
    // placed while that one drains instead of after it ends; every kernel waits, before it
    // touches memory, until the kernels before it have finished. Off: ordinary launches,
    // for A/B measurements.
    bool programmatic_launch = true;
    // FAJIT_CLUSTER_MERGE (default on): on sm_90 and later, a split-KV decode launch whose
    // splits of a (sequence, KV head) fit one thread-block cluster, with every cluster
    // resident at once, is launched so, and the splits merge through each other's shared
    // memory instead of through L2 and an arrival counter. Off: the counter's merge, for
    // A/B measurements.
    bool cluster_merge = true;

    // The fleet cache: a store machines share behind the disk cache (README "Fleet cache").
    // FAJIT_REMOTE_CACHE: redis://host[:port][/db] or unix:///path[?db=N]; empty: none.
    std::string remote_cache;
    // FAJIT_REMOTE_CACHE_KEY: entries are signed with it, and unsigned or wrongly signed ones refused.
    std::string remote_cache_key;
    std::chrono::milliseconds remote_connect_timeout{500};     // FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT, ms
    std::chrono::milliseconds remote_operation_timeout{1000};  // FAJIT_REMOTE_CACHE_TIMEOUT, ms
    // FAJIT_REMOTE_CACHE_BACKOFF, ms: how long the store is left alone after repeated failures.
    std::chrono::milliseconds remote_backoff{std::chrono::seconds(30)};

    // Reads FAJIT_* variables over the defaults; a setting in overrides (same names and
    // syntax as the variables) replaces the variable. Throws InvalidOption naming the
    // variable and its value when one is malformed, or an override name fa-jit does not know.
    static Options from_environment(const std::map<std::string, std::string, std::less<>>& overrides = {});
};

// Parses "2G", "512M", "4096": bytes with an optional binary K/M/G/T suffix.
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

// Parses "bq=64,bk=64,waves=4" (any subset, any order).
std::optional<TilePin> parse_tile_pin(std::string_view text);
std::string to_string(const TilePin&);

}  // namespace fajit
