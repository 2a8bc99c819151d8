#pragma once
// A kernel family as data: everything the library knows of one family, in one place.
// A new family is its template in kernel_templates/, one descriptor (a .cpp file in
// this folder), and one row in the variant table (registry.cpp).
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "backend/backend.hpp"
#include "fajit/attention.hpp"
#include "fajit/kernel_spec.hpp"
#include "spec/shape_class.hpp"

namespace fajit {

struct Tile {
    int block_q = 0;
    int block_k = 0;
    int waves = 0;
};

// The shared memory (LDS) a kernel uses, as the host computes it. The emitter writes
// shared_bytes and every constant into the emitted spec; the template takes its layout
// choices from those constants and static_asserts that its buffers fit in shared_bytes,
// so a host figure below what the kernel uses fails to compile instead of overrunning.
struct LayoutConstant {
    std::string_view name;  // empty: unused
    int value = 0;
};
struct SharedLayout {
    unsigned shared_bytes = 0;  // static or dynamic, whichever the kernel declares
    bool dynamic = false;       // launched as dynamic shared memory of shared_bytes
    // Fixed room, so a launch (which computes the layout) allocates nothing.
    std::array<LayoutConstant, 2> constants{};  // e.g. {"kv_stages", 3}
};

// How a family that splits the key range over blocks (split-KV decode) runs one call:
// the split count and the workspace its partial results need.
struct SplitPlan {
    int num_splits = 1;
    std::size_t partial_floats = 0;    // f32 partial results, for all splits
    std::size_t arrival_counters = 0;  // one per (sequence, KV head), zero between launches
};

struct FamilyDescriptor {
    std::string_view name;           // as spec text spells it
    std::string_view template_file;  // in kernel_templates/
    std::string_view kernel;         // the __global__ template the emitter instantiates
    // Prelude parts the source holds, in order, before the template; prelude_common.h first.
    std::span<const std::string_view> prelude_parts;
    std::span<const DType> dtypes;
    std::span<const int> head_dims;  // ascending
    std::span<const KvLayout> kv_layouts;
    std::string_view targets;  // the archs compiles_for accepts, for messages
    bool (*compiles_for)(std::string_view arch);
    // The family's own rules (tiles, registers, margin) for a spec whose arch, head dim
    // and dtype it supports: empty, or a message naming the field, as validate() gives.
    std::string (*check)(const KernelSpec&);
    // Whether spec can run calls of this shape: empty, or why not (null: every shape the
    // spec's fields allow). The dispatcher passes over a family that refuses, and
    // Runtime::run refuses such a call.
    std::string (*refuses_shape)(const KernelSpec&, const ShapeClass&) = nullptr;
    // Tiles for a shape: the dispatcher's choice, and with QueryLength::large the
    // defaults of spec text.
    Tile (*choose_tile)(const ShapeClass&, std::string_view arch);
    SharedLayout (*shared_layout)(const KernelSpec&);
    unsigned (*shared_limit)(std::string_view arch);  // the most shared memory a block may use
    // num_splits: the plan's split count for a family that splits, else 1.
    LaunchShape (*launch_shape)(const KernelSpec&, const AttentionArgs&, const SharedLayout&, int compute_units,
                                int num_splits);
    // Families that split the key range: the plan of one call. requested_splits > 0 pins
    // the count (FAJIT_DECODE_SPLITS); 0 lets the shape and the compute units decide. Their
    // launches put the splits on the grid's x extent, and their blocks end in
    // fa_split_finish (prelude_split_kv.h), which merges within a cluster when launched as one.
    SplitPlan (*plan_splits)(const KernelSpec&, const AttentionArgs&, int compute_units,
                             int requested_splits) = nullptr;
    // Whether the kernel copies dense calls' Q, K and V through tensor maps (TMA) when the
    // launch fills them (runtime/tensor_maps.hpp), and with its own copies otherwise.
    bool reads_tensor_maps = false;
};

}  // namespace fajit
