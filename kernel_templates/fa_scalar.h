// fa_scalar: the reference and fallback kernel. Plain arithmetic, no matrix units,
// correct for every shape the spec allows; every faster family is tested against it.
//
// One wave owns one query row at a time; a block holds Spec::waves waves and
// Spec::block_q rows. For each step of Spec::block_k keys, every lane scores
// block_k / wave-size keys, the wave agrees on the step's maximum, and the
// rescale-margin rule decides whether the row's frame moves. Each lane then
// accumulates its own slice of the output's head dims (Spec::head_dim_v of them).

template <class Spec>
__global__ void FAJIT_PORTABLE_BOUNDS(Spec::waves* FAJIT_WAVE_SIZE) fa_scalar(fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    constexpr int lanes = FAJIT_WAVE_SIZE;
    constexpr int head_dim = Spec::head_dim;
    constexpr int value_dim = Spec::head_dim_v;  // of V and O
    constexpr int dims_per_lane = (value_dim + lanes - 1) / lanes;
    constexpr int keys_per_lane = Spec::block_k / lanes;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;

    __shared__ float query_rows[Spec::waves][head_dim];
    static_assert(sizeof(query_rows) <= Spec::shared_bytes, "the host counts less shared memory than fa_scalar uses");

    const int lane = threadIdx.x % lanes;
    const int wave = threadIdx.x / lanes;
    const int head = blockIdx.y;
    const int kv_head = head / (p.heads_q / p.heads_kv);
    const fa_sequence sequence = fa_sequence_of<Spec>(p, blockIdx.z);

    const element* q = static_cast<const element*>(p.q);
    const element* k = static_cast<const element*>(p.k);
    const element* v = static_cast<const element*>(p.v);
    using out_element = typename Spec::out_element;
    out_element* o = static_cast<out_element*>(p.o);
    float* query = query_rows[wave];
    const fa_soft_cap cap = fa_soft_cap_of(p);
    const float scale_log2 = fa_scale_log2<Spec>(p, kv_head);

    for (int local_row = wave; local_row < Spec::block_q; local_row += Spec::waves) {
        const int row = blockIdx.x * Spec::block_q + local_row;
        if (row >= sequence.len_q) break;
        const element* query_row = q + fa_row_offset(p.q_stride, sequence, head, row);
        for (int d = lane; d < head_dim; d += lanes) query[d] = fa_to_float(query_row[d]) * scale_log2;
        fa_wave_sync();

        const fa_key_range visible = fa_visible_range<Spec>(p, row, sequence.len_q, sequence.len_k);
        float frame = fa_neg_inf();  // every score and sum below is relative to it
        float lane_sum = 0.0f;
        float out[dims_per_lane];
        for (int c = 0; c < dims_per_lane; ++c) out[c] = 0.0f;

        for (int key0 = visible.begin; key0 < visible.end; key0 += Spec::block_k) {
            float score[keys_per_lane];
            float step_max = fa_neg_inf();
            for (int t = 0; t < keys_per_lane; ++t) {
                const int key = key0 + t * lanes + lane;
                float s = fa_neg_inf();
                if (key < visible.end) {
                    const element* key_row = k + fa_key_offset<Spec>(p, p.k_stride, sequence, kv_head, key);
                    s = 0.0f;
                    for (int d = 0; d < head_dim; ++d) s += query[d] * fa_to_float(key_row[d]);
                    if constexpr (Spec::softcap) s = fa_capped(cap, s);
                }
                score[t] = s;
                step_max = fmaxf(step_max, s);
            }
            step_max = fa_wave_max(step_max);

            // Deferred rescale: the whole wave takes the row's decision; lane 0 reports it.
            float correction;
            if (fa_rescale_frame(p, step_max, margin_log2, frame, correction, lane == 0)) {
                lane_sum *= correction;
                for (int c = 0; c < dims_per_lane; ++c) out[c] *= correction;
            }

            for (int t = 0; t < keys_per_lane; ++t) {
                const float weight = fa_exp2(score[t] - frame);  // exp2(-inf) = 0 for masked keys
                lane_sum += weight;
                const int keys_here = visible.end - (key0 + t * lanes);
                for (int source = 0; source < lanes && source < keys_here; ++source) {
                    const float w = fa_shuffle(weight, source);
                    const element* value_row =
                        v + fa_key_offset<Spec>(p, p.v_stride, sequence, kv_head, key0 + t * lanes + source);
                    for (int c = 0; c < dims_per_lane; ++c) {
                        const int d = lane + c * lanes;
                        if (d < value_dim) out[c] += w * fa_to_float(value_row[d]);
                    }
                }
            }
        }

        float lse;
        const float inverse = fa_row_normalizer<Spec>(p, head, frame, fa_wave_sum(lane_sum), lse);
        out_element* output_row = o + fa_row_offset(p.o_stride, sequence, head, row);
        for (int c = 0; c < dims_per_lane; ++c) {
            const int d = lane + c * lanes;
            if (d < value_dim) output_row[d] = fa_from_float<out_element>(out[c] * inverse);
        }
        if (p.lse && lane == 0) p.lse[fa_lse_index<Spec>(p, sequence, head, row)] = lse;
        fa_wave_sync();
    }
}
