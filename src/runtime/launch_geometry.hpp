#pragma once
// Grid, block and shared memory of a launch: a function of the family's tiling.
#include "backend/backend.hpp"
#include "fajit/attention.hpp"

namespace fajit {

LaunchShape launch_shape(const KernelSpec&, const AttentionArgs&);

// Shared memory (LDS) a family's kernel uses, whether declared statically or launched
// as dynamic shared memory; validation keeps it within the target's limit.
unsigned family_shared_bytes(const KernelSpec&);

}  // namespace fajit
