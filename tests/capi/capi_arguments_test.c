/* The C ABI, compiled as C: malformed arguments and settings each give their documented
 * status and a message naming the field and its value, before anything touches a device.
 * Needs no GPU; the pointers below are never dereferenced. Exit status 0 when all pass. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fajit/fajit.h"

static int failures = 0;
static int checks = 0;

static void expect(const char* what, fajit_status got, fajit_status want, const char* needle) {
    const char* message = fajit_last_error();
    ++checks;
    if (got != want || strstr(message, needle) == NULL) {
        ++failures;
        printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", what, fajit_status_name(got), message,
               fajit_status_name(want), needle);
    }
}

/* B=2, Hq=8, Hkv=2, Lq=16, Lk=32, D=64, f16, BHSD, with an LSE output. */
static fajit_attention_args valid_args(void) {
    fajit_attention_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dtype = FAJIT_DTYPE_F16;
    a.q = (const void*)(uintptr_t)0x100000;
    a.k = (const void*)(uintptr_t)0x200000;
    a.v = (const void*)(uintptr_t)0x300000;
    a.o = (void*)(uintptr_t)0x400000;
    a.lse = (float*)(uintptr_t)0x500000;
    a.batch = 2;
    a.heads_q = 8;
    a.heads_kv = 2;
    a.len_q = 16;
    a.len_k = 32;
    a.head_dim = 64;
    a.lse_batch = 2;
    a.lse_heads = 8;
    a.lse_length = 16;
    a.q_strides.batch = a.o_strides.batch = 8 * 16 * 64;
    a.q_strides.head = a.o_strides.head = 16 * 64;
    a.q_strides.sequence = a.o_strides.sequence = 64;
    a.k_strides.batch = a.v_strides.batch = 2 * 32 * 64;
    a.k_strides.head = a.v_strides.head = 32 * 64;
    a.k_strides.sequence = a.v_strides.sequence = 64;
    a.causal = FAJIT_CAUSAL_BOTTOM_RIGHT;
    a.scale = 0.125f;
    a.device = 0;
    return a;
}

#define MUTATION(name, body) \
    static void name(fajit_attention_args* a) { body; }

MUTATION(null_q, a->q = NULL)
MUTATION(null_k, a->k = NULL)
MUTATION(null_v, a->v = NULL)
MUTATION(null_o, a->o = NULL)
MUTATION(zero_batch, a->batch = 0)
MUTATION(negative_batch, a->batch = -1)
MUTATION(zero_heads_q, a->heads_q = 0)
MUTATION(zero_heads_kv, a->heads_kv = 0)
MUTATION(zero_len_q, a->len_q = 0)
MUTATION(negative_len_k, a->len_k = -5)
MUTATION(zero_head_dim, a->head_dim = 0)
MUTATION(group_not_whole, a->heads_kv = 3)
MUTATION(head_dim_too_large, a->head_dim = 300)
MUTATION(head_dim_not_multiple_of_8, a->head_dim = 60)
MUTATION(head_dim_too_small, a->head_dim = 8)
MUTATION(heads_q_beyond_grid, a->heads_q = 70000)
MUTATION(batch_beyond_grid, a->batch = 70000; a->lse = NULL; a->lse_batch = a->lse_heads = a->lse_length = 0)
MUTATION(dtype_unknown, a->dtype = 9)
MUTATION(dtype_negative, a->dtype = -1)
MUTATION(causal_unknown, a->causal = 3)
MUTATION(scale_infinite, a->scale = INFINITY)
MUTATION(scale_nan, a->scale = NAN)
MUTATION(device_negative, a->device = -1)
MUTATION(q_misaligned, a->q = (const void*)(uintptr_t)0x100001)
MUTATION(o_misaligned, a->o = (void*)(uintptr_t)0x400003)
MUTATION(f32_on_2_byte_alignment, a->dtype = FAJIT_DTYPE_F32; a->k = (const void*)(uintptr_t)0x200002)
MUTATION(lse_misaligned, a->lse = (float*)(uintptr_t)0x500002)
MUTATION(lse_shape_mismatched, a->lse_length = 15)
MUTATION(lse_shape_heads_of_kv, a->lse_heads = 2)
MUTATION(lse_shape_without_lse, a->lse = NULL)
MUTATION(q_head_stride_negative, a->q_strides.head = -1)
MUTATION(k_rows_overlap, a->k_strides.sequence = 3)
MUTATION(v_heads_overlap, a->v_strides.head = 32)
MUTATION(o_rows_written_twice, a->o_strides.sequence = 0)
MUTATION(o_heads_written_twice, a->o_strides.head = 0)
MUTATION(v_strides_overflow, a->v_strides.batch = INT64_MAX - 10)
MUTATION(q_strides_overflow, a->q_strides.sequence = INT64_MAX / 8)
/* A paged call whose fields are all consistent, then one field broken at a time. */
static void make_paged(fajit_attention_args* a) {
    a->kv_layout = FAJIT_KV_PAGED;
    a->q_strides = a->o_strides = (fajit_strides){0, 64, 8 * 64};
    a->k_strides = a->v_strides = (fajit_strides){16 * 2 * 64, 64, 2 * 64};
    a->cu_seqlens_q = (const int32_t*)(uintptr_t)0x600000;
    a->block_table = (const int32_t*)(uintptr_t)0x700000;
    a->kv_lens = (const int32_t*)(uintptr_t)0x800000;
    a->total_q = 32;
    a->max_pages_per_seq = 4;
    a->num_pages = 64;
    a->page_size = 16;
    a->lse_batch = 1;
    a->lse_length = 32;
}
MUTATION(kv_layout_unknown, a->kv_layout = 7)
MUTATION(paged_without_cu_seqlens_q, make_paged(a); a->cu_seqlens_q = NULL)
MUTATION(paged_without_block_table, make_paged(a); a->block_table = NULL)
MUTATION(paged_without_kv_lens, make_paged(a); a->kv_lens = NULL)
MUTATION(paged_page_size_not_power_of_two, make_paged(a); a->page_size = 48)
MUTATION(paged_zero_pages, make_paged(a); a->num_pages = 0)
MUTATION(paged_too_few_pages_per_seq, make_paged(a); a->max_pages_per_seq = 1)
MUTATION(paged_misaligned_block_table, make_paged(a); a->block_table = (const int32_t*)(uintptr_t)0x700002)
MUTATION(paged_with_cu_seqlens_k, make_paged(a); a->cu_seqlens_k = (const int32_t*)(uintptr_t)0x900000)
MUTATION(ragged_without_cu_seqlens_k, make_paged(a); a->kv_layout = FAJIT_KV_RAGGED; a->block_table = NULL;
         a->kv_lens = NULL; a->max_pages_per_seq = a->num_pages = a->page_size = 0)
MUTATION(dense_with_block_table, a->block_table = (const int32_t*)(uintptr_t)0x700000)
MUTATION(dense_with_total_q, a->total_q = 16)
MUTATION(window_flag_unknown, a->use_window = 2)
MUTATION(window_left_below_unbounded, a->use_window = 1; a->window_left = -2)
MUTATION(window_right_below_unbounded, a->use_window = 1; a->window_right = -7)
MUTATION(window_extents_without_window, a->window_left = 5)
MUTATION(softcap_negative, a->softcap = -1.0f)
MUTATION(softcap_nan, a->softcap = NAN)
MUTATION(sinks_misaligned, a->sinks = (const float*)(uintptr_t)0x900002)
MUTATION(head_dim_v_unaligned, a->head_dim_v = 12)
MUTATION(e4m3_with_f32_o, a->dtype = FAJIT_DTYPE_E4M3; a->o_dtype = FAJIT_DTYPE_F32)
MUTATION(o_dtype_without_e4m3, a->o_dtype = FAJIT_DTYPE_BF16)
MUTATION(descale_without_e4m3, a->q_descale = (const float*)(uintptr_t)0x900000; a->descale_heads = 1)
MUTATION(descale_heads_mismatched, a->dtype = FAJIT_DTYPE_E4M3; a->k_descale = (const float*)(uintptr_t)0x900000;
         a->descale_heads = 3)
MUTATION(descale_misaligned, a->dtype = FAJIT_DTYPE_E4M3; a->v_descale = (const float*)(uintptr_t)0x900002;
         a->descale_heads = 1)
MUTATION(descale_heads_without_factors, a->dtype = FAJIT_DTYPE_E4M3; a->descale_heads = 1)
MUTATION(struct_size_zero, a->struct_size = 0)
MUTATION(struct_size_older, a->struct_size = sizeof(fajit_attention_args) - 8)

struct malformed_case {
    const char* name;
    void (*mutate)(fajit_attention_args*);
    const char* needle;
};

static const struct malformed_case cases[] = {
    {"null q", null_q, "q=null"},
    {"null k", null_k, "k=null"},
    {"null v", null_v, "v=null"},
    {"null o", null_o, "o=null"},
    {"zero batch", zero_batch, "batch=0"},
    {"negative batch", negative_batch, "batch=-1"},
    {"zero heads_q", zero_heads_q, "heads_q=0"},
    {"zero heads_kv", zero_heads_kv, "heads_kv=0"},
    {"zero len_q", zero_len_q, "len_q=0"},
    {"negative len_k", negative_len_k, "len_k=-5"},
    {"zero head_dim", zero_head_dim, "head_dim=0"},
    {"heads_q not a multiple of heads_kv", group_not_whole, "heads_q=8: must be a multiple of heads_kv (3)"},
    {"head_dim too large", head_dim_too_large, "head_dim=300"},
    {"head_dim not a multiple of 8", head_dim_not_multiple_of_8, "head_dim=60"},
    {"head_dim too small", head_dim_too_small, "head_dim=8"},
    {"heads_q beyond the grid", heads_q_beyond_grid, "heads_q=70000"},
    {"batch beyond the grid", batch_beyond_grid, "batch=70000"},
    {"unknown dtype", dtype_unknown, "dtype=9"},
    {"negative dtype", dtype_negative, "dtype=-1"},
    {"unknown causal mode", causal_unknown, "causal=3"},
    {"infinite scale", scale_infinite, "scale=inf"},
    {"NaN scale", scale_nan, "scale=nan"},
    {"negative device", device_negative, "device=-1"},
    {"misaligned q", q_misaligned, "q=0x100001"},
    {"misaligned o", o_misaligned, "o=0x400003"},
    {"f32 k on a 2-byte boundary", f32_on_2_byte_alignment, "k=0x200002"},
    {"misaligned lse", lse_misaligned, "lse=0x500002"},
    {"lse shape of the wrong length", lse_shape_mismatched, "lse_shape={2,8,15}"},
    {"lse shape with kv heads", lse_shape_heads_of_kv, "lse_shape={2,2,16}"},
    {"lse shape without lse", lse_shape_without_lse, "lse_shape={2,8,16}: given without an lse buffer"},
    {"negative q head stride", q_head_stride_negative, "q_strides.head=-1"},
    {"overlapping k rows", k_rows_overlap, "k_strides.sequence=3"},
    {"overlapping v heads", v_heads_overlap, "v_strides.head=32"},
    {"o rows written twice", o_rows_written_twice, "o_strides.sequence=0"},
    {"o heads written twice", o_heads_written_twice, "o_strides.head=0"},
    {"v offsets overflow", v_strides_overflow, "v_strides={"},
    {"q offsets overflow", q_strides_overflow, "q_strides={"},
    {"unknown kv layout", kv_layout_unknown, "kv_layout=7"},
    {"paged without cu_seqlens_q", paged_without_cu_seqlens_q, "cu_seqlens_q=null"},
    {"paged without a block table", paged_without_block_table, "block_table=null"},
    {"paged without kv_lens", paged_without_kv_lens, "kv_lens=null"},
    {"page size not a power of two", paged_page_size_not_power_of_two, "page_size=48"},
    {"paged cache of no pages", paged_zero_pages, "num_pages=0"},
    {"pages per sequence too few for len_k", paged_too_few_pages_per_seq, "len_k=32: more keys than"},
    {"misaligned block table", paged_misaligned_block_table, "block_table=0x700002"},
    {"paged with ragged key offsets", paged_with_cu_seqlens_k, "cu_seqlens_k=0x900000: given"},
    {"ragged without key offsets", ragged_without_cu_seqlens_k, "cu_seqlens_k=null"},
    {"dense with a block table", dense_with_block_table, "block_table=0x700000: given"},
    {"dense with total_q", dense_with_total_q, "total_q=16: given"},
    {"unknown use_window", window_flag_unknown, "use_window=2"},
    {"window left extent below -1", window_left_below_unbounded, "window_left=-2"},
    {"window right extent below -1", window_right_below_unbounded, "window_right=-7"},
    {"window extents without use_window", window_extents_without_window, "window_left=5"},
    {"negative softcap", softcap_negative, "softcap=-1"},
    {"NaN softcap", softcap_nan, "softcap=nan"},
    {"misaligned sinks", sinks_misaligned, "sinks=0x900002"},
    {"V head dim not a multiple of 8", head_dim_v_unaligned, "head_dim_v=12"},
    {"e4m3 inputs with an f32 o", e4m3_with_f32_o, "o_dtype=f32: e4m3 inputs need an f16 or bf16 o"},
    {"o_dtype for f16 inputs", o_dtype_without_e4m3, "o_dtype=bf16: only e4m3 inputs take one"},
    {"descale factors for f16 inputs", descale_without_e4m3, "q_descale=0x900000: only e4m3 inputs"},
    {"descale heads neither 1 nor heads_kv", descale_heads_mismatched, "descale_heads=3: must be 1"},
    {"misaligned descale factors", descale_misaligned, "v_descale=0x900002: must be aligned"},
    {"descale heads without factors", descale_heads_without_factors, "descale_heads=1: must be 0"},
    {"struct_size zero", struct_size_zero, "struct_size=0"},
    {"struct_size of an older header", struct_size_older, "struct_size="},
};

static void check_settings(void) {
    fajit_runtime* runtime = (fajit_runtime*)(uintptr_t)0x1;
    const fajit_setting bad_tile[] = {{"FAJIT_TILE", "bq=x"}};
    expect("malformed FAJIT_TILE", fajit_runtime_create(bad_tile, 1, &runtime), FAJIT_ERROR_INVALID_OPTION,
           "FAJIT_TILE=bq=x");
    expect("runtime cleared on failure", runtime == NULL ? FAJIT_SUCCESS : FAJIT_ERROR_RUNTIME, FAJIT_SUCCESS, "");
    const fajit_setting bad_family[] = {{"FAJIT_FAMILY", "wmma-gfx12"}};
    expect("unknown FAJIT_FAMILY", fajit_runtime_create(bad_family, 1, &runtime), FAJIT_ERROR_INVALID_OPTION,
           "FAJIT_FAMILY=wmma-gfx12");
    const fajit_setting bad_flag[] = {{"FAJIT_STRICT", "2"}};
    expect("malformed FAJIT_STRICT", fajit_runtime_create(bad_flag, 1, &runtime), FAJIT_ERROR_INVALID_OPTION,
           "FAJIT_STRICT=2");
    const fajit_setting unknown[] = {{"FAJIT_TURBO", "1"}};
    expect("unknown setting", fajit_runtime_create(unknown, 1, &runtime), FAJIT_ERROR_INVALID_OPTION,
           "FAJIT_TURBO=1: not a fa-jit setting");
    const fajit_setting unnamed[] = {{NULL, "1"}};
    expect("unnamed setting", fajit_runtime_create(unnamed, 1, &runtime), FAJIT_ERROR_INVALID_ARGUMENT,
           "settings[0].name=null");
    expect("settings null with a count", fajit_runtime_create(NULL, 2, &runtime), FAJIT_ERROR_INVALID_ARGUMENT,
           "settings=null with count=2");
    expect("no place for the runtime", fajit_runtime_create(NULL, 0, NULL), FAJIT_ERROR_INVALID_ARGUMENT,
           "runtime=null");
}

int main(void) {
    if (fajit_version()[0] == '\0') {
        printf("FAIL fajit_version is empty\n");
        return 1;
    }
    check_settings();

    /* The cache stays in memory: the test writes nothing. */
    const fajit_setting settings[] = {{"FAJIT_CACHE_DISABLE", "1"}, {"FAJIT_LOG_LEVEL", "error"}};
    fajit_runtime* runtime = NULL;
    expect("create", fajit_runtime_create(settings, 2, &runtime), FAJIT_SUCCESS, "");
    if (!runtime) return 1;
    expect("last error cleared by success", strlen(fajit_last_error()) == 0 ? FAJIT_SUCCESS : FAJIT_ERROR_RUNTIME,
           FAJIT_SUCCESS, "");

    const size_t count = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < count; ++i) {
        fajit_attention_args args = valid_args();
        cases[i].mutate(&args);
        expect(cases[i].name, fajit_attention(runtime, &args, NULL), FAJIT_ERROR_INVALID_ARGUMENT, cases[i].needle);
        char spec[256];
        expect(cases[i].name, fajit_selected_variant(runtime, &args, spec, sizeof spec), FAJIT_ERROR_INVALID_ARGUMENT,
               cases[i].needle);
    }

    const fajit_attention_args args = valid_args();
    expect("null args", fajit_attention(runtime, NULL, NULL), FAJIT_ERROR_INVALID_ARGUMENT, "args=null");
    expect("null runtime", fajit_attention(NULL, &args, NULL), FAJIT_ERROR_INVALID_ARGUMENT, "runtime=null");
    expect("null spec buffer", fajit_selected_variant(runtime, &args, NULL, 0), FAJIT_ERROR_INVALID_ARGUMENT,
           "buffer=null");

    const char* specs[] = {"family=scalar,d=64,dtype=f16,arch=sm_90", "family=scalar,d=64,dtype=f16", NULL};
    expect("spec missing its arch", fajit_warm(runtime, specs + 1, 1), FAJIT_ERROR_INVALID_ARGUMENT,
           "specs[0]=\"family=scalar,d=64,dtype=f16\": arch: missing");
    expect("null spec", fajit_warm(runtime, specs + 2, 1), FAJIT_ERROR_INVALID_ARGUMENT, "specs[0]=null");
    const char* invalid[] = {"family=wmma-gfx11,d=128,dtype=f16,bq=48,arch=gfx1151"};
    expect("spec the family cannot run", fajit_warm(runtime, invalid, 1), FAJIT_ERROR_INVALID_ARGUMENT,
           "bq=48: family wmma-gfx11 needs 16 query rows per wave");
    expect("specs null with a count", fajit_warm(runtime, NULL, 1), FAJIT_ERROR_INVALID_ARGUMENT, "specs=null");
    expect("status names",
           strcmp(fajit_status_name(FAJIT_ERROR_UNSUPPORTED), "FAJIT_ERROR_UNSUPPORTED") == 0 ? FAJIT_SUCCESS
                                                                                              : FAJIT_ERROR_RUNTIME,
           FAJIT_SUCCESS, "");

    fajit_runtime_destroy(runtime);
    fajit_runtime_destroy(NULL);
    printf(
        "%d checks (%zu malformed argument sets, each through fajit_attention and fajit_selected_variant), "
        "%d failed\n",
        checks, count, failures);
    return failures == 0 ? 0 : 1;
}
