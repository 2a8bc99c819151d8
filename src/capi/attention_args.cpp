#include "capi/attention_args.hpp"

#include <stdexcept>
#include <string>

namespace fajit::capi {
namespace {

Strides to_strides(const fajit_strides& strides) { return {strides.batch, strides.head, strides.sequence}; }

}  // namespace

AttentionArgs to_attention_args(const fajit_attention_args* args) {
    if (!args) throw std::invalid_argument("args=null: a fajit_attention_args is required");
    if (args->struct_size != sizeof(fajit_attention_args))
        throw std::invalid_argument("struct_size=" + std::to_string(args->struct_size) + ": expected " +
                                    std::to_string(sizeof(fajit_attention_args)) +
                                    " (sizeof(fajit_attention_args)); the caller's fajit.h differs from the library's");
    AttentionArgs converted;
    converted.q = args->q;
    converted.k = args->k;
    converted.v = args->v;
    converted.o = args->o;
    converted.lse = args->lse;
    converted.lse_shape = {args->lse_batch, args->lse_heads, args->lse_length};
    converted.dtype = static_cast<DType>(args->dtype);
    converted.batch = args->batch;
    converted.heads_q = args->heads_q;
    converted.heads_kv = args->heads_kv;
    converted.len_q = args->len_q;
    converted.len_k = args->len_k;
    converted.head_dim = args->head_dim;
    converted.head_dim_v = args->head_dim_v;
    converted.q_strides = to_strides(args->q_strides);
    converted.k_strides = to_strides(args->k_strides);
    converted.v_strides = to_strides(args->v_strides);
    converted.o_strides = to_strides(args->o_strides);
    converted.scale = args->scale;
    converted.causal = static_cast<CausalMode>(args->causal);
    converted.device = args->device;
    converted.kv_layout = static_cast<KvLayout>(args->kv_layout);
    SequenceBatch& sequences = converted.sequences;
    sequences.cu_seqlens_q = args->cu_seqlens_q;
    sequences.cu_seqlens_k = args->cu_seqlens_k;
    sequences.block_table = args->block_table;
    sequences.kv_lens = args->kv_lens;
    sequences.total_q = args->total_q;
    sequences.total_k = args->total_k;
    sequences.max_pages_per_seq = args->max_pages_per_seq;
    sequences.num_pages = args->num_pages;
    sequences.page_size = args->page_size;
    if (args->use_window != 0 && args->use_window != 1)
        throw std::invalid_argument("use_window=" + std::to_string(args->use_window) + ": expected 0 or 1");
    if (args->use_window)
        converted.window = SlidingWindow{args->window_left, args->window_right};
    else if (args->window_left != 0 || args->window_right != 0)
        throw std::invalid_argument("window_left=" + std::to_string(args->window_left) + ", window_right=" +
                                    std::to_string(args->window_right) + ": given, but use_window is 0");
    converted.softcap = args->softcap;
    converted.sinks = args->sinks;
    // o_dtype's zero is f16, which is also what "unset" reads as: it is o's dtype only
    // with e4m3 inputs, and check_arguments refuses it otherwise unless 0.
    if (converted.dtype == DType::e4m3 || args->o_dtype != 0) converted.o_dtype = static_cast<DType>(args->o_dtype);
    converted.descale = {args->q_descale, args->k_descale, args->v_descale, args->descale_heads};
    return converted;
}

}  // namespace fajit::capi
