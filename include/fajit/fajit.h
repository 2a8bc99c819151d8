/* fa-jit C ABI: flash attention compiled at run time for the device and shape.
 *
 * For engines written in C, Rust, Python (ctypes/cffi) and anything else that can call C.
 * Every function returns a fajit_status (except the few that cannot fail); on failure
 * fajit_last_error() gives a message naming the field or variant and its value. Nothing
 * here throws, aborts or prints, except the library's own log (FAJIT_LOG_LEVEL).
 *
 * Thread safety: a runtime may be shared by any number of threads. The last error is per
 * thread.
 */
#ifndef FAJIT_FAJIT_H
#define FAJIT_FAJIT_H

#include <stddef.h>
#include <stdint.h>

#define FAJIT_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* Results. Values are stable across versions; new ones are only ever added. */
typedef enum fajit_status {
    FAJIT_SUCCESS = 0,
    /* An argument is malformed (null pointer, non-positive size, bad stride, dtype, scale,
     * LSE shape, struct_size, ...). Nothing touched a device. */
    FAJIT_ERROR_INVALID_ARGUMENT = 1,
    /* A setting given to fajit_runtime_create, or a FAJIT_* environment variable, is malformed
     * or unknown; or FAJIT_TILE does not fit the selected variant. */
    FAJIT_ERROR_INVALID_OPTION = 2,
    /* No backend sees a GPU (no driver, no device), or the device ordinal is not seen. */
    FAJIT_ERROR_NO_DEVICE = 3,
    /* FAJIT_STRICT=1 and the selected variant cannot run this shape on this device. */
    FAJIT_ERROR_UNSUPPORTED = 4,
    /* The compiler rejected the kernel: the scalar one, or any variant under FAJIT_STRICT=1. */
    FAJIT_ERROR_COMPILE_FAILED = 5,
    /* The device loader rejected the code: the scalar one, or any variant under FAJIT_STRICT=1. */
    FAJIT_ERROR_LOAD_FAILED = 6,
    /* The kernel launch failed (the message has the driver's error). */
    FAJIT_ERROR_LAUNCH_FAILED = 7,
    /* Anything else: no compiler library for the device's arch, out of memory, ... */
    FAJIT_ERROR_RUNTIME = 8
} fajit_status;

/* Element types of q, k, v and o. */
enum {
    FAJIT_DTYPE_F16 = 0,  /* IEEE binary16 */
    FAJIT_DTYPE_BF16 = 1, /* bfloat16 */
    FAJIT_DTYPE_F32 = 2,  /* binary32; runs the scalar family only */
    FAJIT_DTYPE_E4M3 = 3  /* OCP FP8 E4M3 (finite, max 448): q, k and v only; o is o_dtype */
};

/* How the call's sequences and their K/V are laid out (fajit_attention_args.kv_layout):
 *   DENSE   one length for all: q, k, v, o are [batch, heads, len, head_dim] by strides
 *   RAGGED  q, o packed [total_q, heads_q, head_dim] and k, v packed [total_k, heads_kv,
 *           head_dim], split into sequences by cu_seqlens_q / cu_seqlens_k (FlashAttention's
 *           varlen form)
 *   PAGED   q, o packed as for RAGGED; k, v in a paged cache [num_pages, page_size, heads_kv,
 *           head_dim] (or [num_pages, heads_kv, page_size, head_dim], by strides {page, head,
 *           slot}), with a block table and per-sequence lengths (vLLM's and FlashAttention's
 *           KV cache form)
 * In the batched forms the strides' batch member of q and o (and of k, v for RAGGED) is
 * ignored, len_q and len_k are the longest sequence's, and each sequence is masked on its
 * own (bottom-right aligns its last query with its last key). */
enum { FAJIT_KV_DENSE = 0, FAJIT_KV_RAGGED = 1, FAJIT_KV_PAGED = 2 };

/* Causal masking. With len_q queries and len_k keys, query row i sees keys j with:
 *   NONE:         every j
 *   TOP_LEFT:     j <= i
 *   BOTTOM_RIGHT: j <= i + len_k - len_q  (queries are the last len_q positions: chunked
 *                 prefill and decode). A row that sees no key gets o = 0 and lse = -inf. */
enum { FAJIT_CAUSAL_NONE = 0, FAJIT_CAUSAL_TOP_LEFT = 1, FAJIT_CAUSAL_BOTTOM_RIGHT = 2 };

typedef struct fajit_runtime fajit_runtime;

/* One setting, named like its environment variable. Known names:
 *   FAJIT_CACHE_DIR       directory of compiled kernels (default $XDG_CACHE_HOME/fa-jit or ~/.cache/fa-jit)
 *   FAJIT_CACHE_MAX_SIZE  bytes, with an optional K/M/G/T suffix (default 2G)
 *   FAJIT_CACHE_DISABLE   1: keep compiled kernels in memory only
 *   FAJIT_TEMPLATE_DIR    read kernel templates from this directory instead of the embedded ones
 *   FAJIT_LOG_LEVEL       trace, debug, info, warn (default), error, off
 *   FAJIT_DEBUG_COUNTERS  1: compile the kernels' test counters in (tests only)
 *   FAJIT_FAMILY          auto (default) or a family name such as scalar or wmma-gfx11: run
 *                         this family whatever the selection table prefers (wmma-gfx11 runs
 *                         emulated on NVIDIA)
 *   FAJIT_FORCE_FALLBACK  1: always run the scalar family
 *   FAJIT_TILE            e.g. bq=64,bk=64,waves=4: pin tile sizes of the selected variant
 *   FAJIT_STRICT          1: an error instead of a scalar fallback (unsupported shape, failed
 *                         compile or load); FAJIT_FORCE_FALLBACK stays allowed
 *   FAJIT_CHECK_INDICES   1 (default): before a batched call, read its cu_seqlens, kv_lens and
 *                         block table back and check them (monotonic, within the totals,
 *                         pages in range); this waits for the stream. 0: trust them, as CUDA
 *                         graph capture needs (kernels clamp them: a bad one gives a wrong
 *                         sequence, never a read or write outside q, k, v, o and lse)
 *   FAJIT_DECODE_SPLITS   split count of every split-KV decode launch (1..64); 0 (default) plans it
 *                         per call. Splits follow each sequence's own length, so a CUDA graph
 *                         captured with a pinned count stays right as lengths grow
 *   FAJIT_TENSOR_MAPS     1 (default): wgmma-sm90 copies dense calls' Q, K and V through
 *                         tensor maps (TMA); 0: with its own copies, as for batched layouts
 *   FAJIT_PROGRAMMATIC_LAUNCH  1 (default): on sm_90 and later each kernel is launched as a
 *                         programmatic dependent of the kernel before it in the stream (placed
 *                         while that one drains; it waits for it before touching memory); 0: not
 *   FAJIT_CLUSTER_MERGE   1 (default): on sm_90 and later the splits of a split-KV decode launch
 *                         merge within a thread-block cluster where one holds them; 0: through L2
 *   FAJIT_REMOTE_CACHE    redis://host[:port][/db] or unix:///path[?db=N]: the fleet cache
 *                         behind the disk cache (README, "Fleet cache")
 *   FAJIT_REMOTE_CACHE_KEY  sign stored entries (HMAC-SHA256); refuse unsigned or wrongly
 *                         signed ones
 *   FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT, FAJIT_REMOTE_CACHE_TIMEOUT, FAJIT_REMOTE_CACHE_BACKOFF
 *                         milliseconds (defaults 500, 1000, 30000)
 *   FAJIT_MAX_LOADED_KERNELS  kernels kept loaded (default 256); past it the least recently
 *                         used is unloaded, so a CUDA graph that captured it must not be
 *                         replayed afterwards
 * Flags take 1/0, true/false, yes/no or on/off. An empty value means unset. */
typedef struct fajit_setting {
    const char* name;
    const char* value;
} fajit_setting;

/* Element strides of one tensor, in elements (not bytes). The head dimension is always
 * contiguous (stride 1). A dimension of extent > 1 needs a stride >= head_dim, or 0 to
 * broadcast (inputs only); strides of extent-1 dimensions are ignored. o's rows must not
 * share elements: taken in stride order, each stride must pass the last element its finer
 * dimensions reach (true of any non-overlapping tensor a framework makes). */
typedef struct fajit_strides {
    int64_t batch;
    int64_t head;
    int64_t sequence;
} fajit_strides;

/* One attention call: o = softmax(scale * q k^T, masked) v per (batch, query head), where
 * query head h reads key/value head h / (heads_q / heads_kv) (grouped-query attention). */
typedef struct fajit_attention_args {
    /* sizeof(fajit_attention_args) as the caller was compiled: catches a header/library
     * mismatch instead of reading past the caller's struct. */
    uint32_t struct_size;
    int32_t dtype; /* FAJIT_DTYPE_* of q, k, v and o (o: see o_dtype) */
    const void* q; /* device pointer, [batch, heads_q, len_q, head_dim] by q_strides */
    const void* k; /* device pointer, [batch, heads_kv, len_k, head_dim] by k_strides */
    const void* v; /* device pointer, [batch, heads_kv, len_k, head_dim] by v_strides */
    void* o;       /* device pointer, [batch, heads_q, len_q, head_dim] by o_strides; written */
    /* Optional device pointer to f32 natural-log sum-exp of the scaled scores per query row,
     * contiguous [batch, heads_q, len_q] (batched forms: [heads_q, total_q]); NULL for none. */
    float* lse;
    fajit_strides q_strides;
    fajit_strides k_strides;
    fajit_strides v_strides;
    fajit_strides o_strides;
    /* The shape the caller allocated for lse: must be {batch, heads_q, len_q} (batched forms:
     * {1, heads_q, total_q}) when lse is given, all zero when it is not. */
    int32_t lse_batch;
    int32_t lse_heads;
    int32_t lse_length;
    int32_t batch;    /* >= 1, at most 65535 */
    int32_t heads_q;  /* >= 1, at most 65535, a multiple of heads_kv */
    int32_t heads_kv; /* >= 1 */
    int32_t len_q;    /* >= 1 */
    int32_t len_k;    /* >= 1 */
    int32_t head_dim; /* of q and k (and v and o unless head_dim_v says otherwise): 16..256 in steps of 8 */
    int32_t causal;   /* FAJIT_CAUSAL_* */
    float scale;      /* softmax scale, finite; typically 1/sqrt(head_dim) */
    int32_t device;   /* device ordinal within the backend that runs (CUDA or HIP numbering) */
    /* FAJIT_KV_*; the fields below are used only by the layouts named, and must be NULL / 0
     * otherwise. Every pointer is a device pointer to int32. */
    int32_t kv_layout;
    const int32_t* cu_seqlens_q; /* RAGGED, PAGED: [batch + 1] cumulative query rows */
    const int32_t* cu_seqlens_k; /* RAGGED: [batch + 1] cumulative keys */
    const int32_t* block_table;  /* PAGED: [batch, max_pages_per_seq] page indices */
    const int32_t* kv_lens;      /* PAGED: [batch] keys per sequence */
    int32_t total_q;             /* RAGGED, PAGED: rows of the packed q and o */
    int32_t total_k;             /* RAGGED: rows of the packed k and v */
    int32_t max_pages_per_seq;   /* PAGED */
    int32_t num_pages;           /* PAGED: pages in the cache */
    int32_t page_size;           /* PAGED: keys per page, a power of two from 1 to 256 */
    /* Model features: all 0 / NULL for plain attention. */
    /* 1: a sliding window. Query row i sees the keys from window_left before its diagonal
     * key to window_right after it (-1 leaves a side unbounded), within the causal mask.
     * The diagonal key is i + len_k - len_q, or i under FAJIT_CAUSAL_TOP_LEFT. 0: no window,
     * and window_left and window_right must be 0. */
    int32_t use_window;
    int32_t window_left;
    int32_t window_right;
    float softcap;      /* > 0: each scaled score s becomes softcap * tanh(s / softcap); 0: none */
    const float* sinks; /* device pointer to [heads_q] f32 sink logits, whose exp joins each
                         * row's softmax denominator (and LSE); NULL: none */
    /* The head dim of v and o where it differs from q's and k's head_dim (DeepSeek's MLA
     * prefill: 192 for q and k, 128 for v and o); 16..256 in steps of 8, or 0 for head_dim.
     * v and o then have head_dim_v elements per row in the shapes above. */
    int32_t head_dim_v;
    /* FP8 inputs (dtype FAJIT_DTYPE_E4M3); for every other dtype all 0 / NULL. */
    int32_t o_dtype; /* FAJIT_DTYPE_F16 or FAJIT_DTYPE_BF16: the dtype of o */
    /* Dequantization factors: the call computes with q, k and v times their factors. Device
     * pointers to f32, one per KV head (descale_heads = heads_kv; a query head takes its KV
     * head's q factor) or one per tensor (descale_heads = 1); NULL for a factor of 1, and
     * descale_heads 0 when all three are NULL. */
    const float* q_descale;
    const float* k_descale;
    const float* v_descale;
    int32_t descale_heads;
} fajit_attention_args;

/* The library's version, e.g. "0.1.0". Never NULL. */
FAJIT_API const char* fajit_version(void);

/* The message of this thread's last failed call; "" after a successful one. Valid until
 * this thread's next fa-jit call. Never NULL. */
FAJIT_API const char* fajit_last_error(void);

/* The enumerator's name, e.g. "FAJIT_ERROR_INVALID_ARGUMENT"; "unknown status" otherwise. */
FAJIT_API const char* fajit_status_name(fajit_status status);

/* Creates a runtime from the FAJIT_* environment, with settings[0..count) replacing the
 * variables of the same names (settings may be NULL when count is 0). Needs no GPU: devices
 * and compilers are looked for on first use. On failure *runtime is set to NULL. */
FAJIT_API fajit_status fajit_runtime_create(const fajit_setting* settings, size_t count, fajit_runtime** runtime);

/* Destroys a runtime; NULL is allowed. No call on it may be running or follow. */
FAJIT_API void fajit_runtime_destroy(fajit_runtime* runtime);

/* Compiles each canonical spec (as printed by `fa-jit emit`/`compile`, e.g.
 * "family=scalar,d=128,dtype=f16,arch=sm_90") into the cache, so first calls do not wait
 * for the compiler. Stops at the first failure, whose message names the spec's index. */
FAJIT_API fajit_status fajit_warm(fajit_runtime* runtime, const char* const* specs, size_t count);

/* Runs attention on stream (a hipStream_t or CUstream; NULL: the default stream). The
 * arguments are checked before anything touches a device. The first call of a shape class
 * selects the variant, compiles it at most once (or finds it in the cache) and loads it;
 * a variant that cannot run falls back to the scalar family with one warning in the log,
 * or fails under FAJIT_STRICT=1. Returns once the launch is queued. */
FAJIT_API fajit_status fajit_attention(fajit_runtime* runtime, const fajit_attention_args* args, void* stream);

/* Writes the canonical spec fajit_attention runs for args (after any fallback), NUL-
 * terminated, into buffer[0..size). Prepares the variant as fajit_attention would. A
 * buffer too small is FAJIT_ERROR_INVALID_ARGUMENT naming the size needed. */
FAJIT_API fajit_status fajit_selected_variant(fajit_runtime* runtime, const fajit_attention_args* args, char* buffer,
                                              size_t size);

#ifdef __cplusplus
}
#endif

#endif /* FAJIT_FAJIT_H */
