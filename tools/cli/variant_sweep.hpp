#pragma once
// Turns what an operator asks to warm (archs x families x head dims x dtypes x causal modes x
// K/V layouts x query shapes, plus tile settings) into the list of valid KernelSpecs. Shared by warm's flags and the
// sweeps of a manifest, so both accept exactly the same values.
#include <optional>
#include <string>
#include <vector>

#include "fajit/kernel_spec.hpp"

namespace fajit::cli {

// Values as typed: names, numbers and head dim ranges ("64-128:8", step 8 when omitted).
struct SweepRequest {
    std::vector<std::string> archs;     // full target names; must not be empty
    std::string preset;                 // supplies the head dim when head_dims is empty
    std::vector<std::string> families;  // empty: every family valid for each arch
    std::vector<std::string> head_dims;
    std::optional<int> head_dim_v;          // of V and O, for every head dim; empty: the preset's, else each head dim
    std::vector<std::string> dtypes;        // empty: f16 and bf16
    std::string out_dtype;                  // O's with e4m3 inputs: f16 or bf16; empty: bf16
    std::vector<std::string> causal_modes;  // empty: none and bottom-right
    std::vector<int> page_sizes;            // each adds paged K/V; dense always
    bool decode = false;                    // adds one-token decode shapes to prefill
    std::optional<int> gqa_group;           // for decode; empty: the preset's, else 1
    // Model features, on top of the preset's: window adds windowed variants beside the
    // plain ones; softcap and sinks make every variant take them.
    bool window = false;
    bool softcap = false;
    bool sinks = false;
    std::optional<float> margin;                 // empty: what the runtime selects for the dtype
    std::optional<int> block_q, block_k, waves;  // empty: the family's defaults
};

// Every valid combination, in a stable order, each with the tiles the dispatcher picks for
// its shape. Combinations a spec validation rejects (a
// family on an arch it does not compile for) are skipped and logged at debug level. Throws UsageError, with the
// validation message naming the field, when a value named on its own (not produced by a
// range or a default) is valid for no arch and family, or when nothing valid remains.
std::vector<KernelSpec> expand_sweep(const SweepRequest& request);

}  // namespace fajit::cli
