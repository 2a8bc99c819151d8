#pragma once
// The kernel's one by-value argument; kernel_templates/prelude.h declares the same
// struct (fa_params) for the device. Both sides assert the size, and the compile suite
// (tests/compile/kernel_arguments_layout_test.cpp) checks every field's offset and size
// under each compiler; a new field goes into its list too.
#include <cstdint>

#include "fajit/attention.hpp"

namespace fajit {

struct KernelArguments {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    float* lse;
    unsigned long long* debug_counters;
    std::int64_t q_stride[3];
    std::int64_t k_stride[3];
    std::int64_t v_stride[3];
    std::int64_t o_stride[3];
    int batch;
    int heads_q;
    int heads_kv;
    int len_q;
    int len_k;
    float scale;
};
static_assert(sizeof(KernelArguments) == 168, "KernelArguments layout changed: update fa_params in prelude.h too");

KernelArguments make_kernel_arguments(const AttentionArgs&);

}  // namespace fajit
