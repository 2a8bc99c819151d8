#include "runtime/kernel_arguments.hpp"

namespace fajit {

KernelArguments make_kernel_arguments(const AttentionArgs& args) {
    const auto strides = [](const Strides& s, std::int64_t(&out)[3]) {
        out[0] = s.batch;
        out[1] = s.head;
        out[2] = s.sequence;
    };
    KernelArguments kernel{};
    kernel.q = args.q;
    kernel.k = args.k;
    kernel.v = args.v;
    kernel.o = args.o;
    kernel.lse = args.lse;
    kernel.debug_counters = args.debug_counters;
    strides(args.q_strides, kernel.q_stride);
    strides(args.k_strides, kernel.k_stride);
    strides(args.v_strides, kernel.v_stride);
    strides(args.o_strides, kernel.o_stride);
    kernel.batch = args.batch;
    kernel.heads_q = args.heads_q;
    kernel.heads_kv = args.heads_kv;
    kernel.len_q = args.len_q;
    kernel.len_k = args.len_k;
    kernel.scale = args.scale;
    return kernel;
}

}  // namespace fajit
