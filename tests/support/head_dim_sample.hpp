#pragma once
// The head dims a sweep covers: a covering sample of a family's (both edges, the measured
// ones, and some that need padding to the instruction shape), or every one of them with
// FAJIT_TEST_EXHAUSTIVE=1 (tools/test.sh --exhaustive).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "families/registry.hpp"

namespace fajit::testing {

inline bool exhaustive_sweeps() {
    const char* exhaustive = std::getenv("FAJIT_TEST_EXHAUSTIVE");
    return exhaustive && std::string(exhaustive) == "1";
}

// The head dims each tensor-core family was first measured at.
inline bool measured_head_dim(int head_dim) {
    return head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128 || head_dim == 256;
}

inline std::vector<int> family_head_dims(const std::string& family) {
    const auto dims = find_family(family)->head_dims;
    if (exhaustive_sweeps()) return {dims.begin(), dims.end()};
    std::vector<int> sample;
    for (const int dim : {16, 24, 64, 80, 96, 112, 128, 184, 256})
        if (std::find(dims.begin(), dims.end(), dim) != dims.end()) sample.push_back(dim);
    return sample;
}

}  // namespace fajit::testing
