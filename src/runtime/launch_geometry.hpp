#pragma once
// Grid, block and shared memory of a launch: a function of the family's tiling.
#include "backend/backend.hpp"
#include "fajit/attention.hpp"

namespace fajit {

// compute_units: the device's multiprocessors (CUs), which size a persistent grid; 0 when
// unknown gives one block per query tile.
LaunchShape launch_shape(const KernelSpec&, const AttentionArgs&, int compute_units);

// Shared memory (LDS) a family's kernel uses, whether declared statically or launched
// as dynamic shared memory; validation keeps it within the target's limit.
unsigned family_shared_bytes(const KernelSpec&);

}  // namespace fajit
