#pragma once
// Grid, block and shared memory of a launch: a function of the family's tiling.
#include "backend/backend.hpp"
#include "fajit/attention.hpp"

namespace fajit {

LaunchShape launch_shape(const KernelSpec&, const AttentionArgs&);

}  // namespace fajit
