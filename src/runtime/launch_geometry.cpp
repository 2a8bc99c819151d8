#include "runtime/launch_geometry.hpp"

#include "spec/arch.hpp"

namespace fajit {

LaunchShape launch_shape(const KernelSpec& spec, const AttentionArgs& args) {
    // Every family tiles queries by block_q rows, one block per (tile, head, batch).
    LaunchShape shape;
    shape.grid[0] = static_cast<unsigned>((args.len_q + spec.block_q - 1) / spec.block_q);
    shape.grid[1] = static_cast<unsigned>(args.heads_q);
    shape.grid[2] = static_cast<unsigned>(args.batch);
    shape.block[0] = static_cast<unsigned>(spec.waves * wave_size(spec.arch));
    return shape;
}

}  // namespace fajit
