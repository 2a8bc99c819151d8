#include "runtime/kernel_arguments.hpp"

namespace fajit {

KernelArguments make_kernel_arguments(const AttentionArgs& args, const SplitWorkspace& split) {
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
    const SequenceBatch& sequences = args.sequences;
    if (args.kv_layout != KvLayout::dense) {
        // Packed q and o: the sequence's first row comes from cu_seqlens_q, not a batch stride.
        kernel.q_stride[0] = kernel.o_stride[0] = 0;
        kernel.cu_seqlens_q = sequences.cu_seqlens_q;
        kernel.total_q = sequences.total_q;
    }
    if (args.kv_layout == KvLayout::ragged) {
        kernel.k_stride[0] = kernel.v_stride[0] = 0;
        kernel.cu_seqlens_k = sequences.cu_seqlens_k;
        kernel.total_k = sequences.total_k;
    }
    if (args.kv_layout == KvLayout::paged) {
        kernel.block_table = sequences.block_table;
        kernel.kv_lens = sequences.kv_lens;
        kernel.max_pages_per_seq = sequences.max_pages_per_seq;
        kernel.num_pages = sequences.num_pages;
    }
    kernel.split_partials = split.partials;
    kernel.split_arrivals = split.arrivals;
    kernel.num_splits = split.num_splits;
    kernel.sinks = args.sinks;
    kernel.window_left = args.window ? args.window->left : -1;
    kernel.window_right = args.window ? args.window->right : -1;
    kernel.softcap = args.softcap;
    kernel.q_descale = args.descale.q;
    kernel.k_descale = args.descale.k;
    kernel.v_descale = args.descale.v;
    kernel.descale_heads = args.descale.heads > 0 ? args.descale.heads : 1;
    return kernel;
}

}  // namespace fajit
