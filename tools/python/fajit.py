"""ctypes binding of fa-jit's C ABI (include/fajit/fajit.h) for PyTorch tensors.

    rt = fajit.Runtime("build/src/libfajit.so", FAJIT_FAMILY="wmma-gfx11")
    o = rt.attention(q, k, v, causal="bottom-right")
    o = rt.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal="bottom-right")
    o = rt.attention_paged(q, k_cache, v_cache, cu_seqlens_q, block_table, kv_lens, max_seqlen_q, causal="bottom-right")

attention: q is [batch, heads_q, len_q, head_dim] and k, v are [batch, heads_kv, len_k, head_dim],
as torch.nn.functional.scaled_dot_product_attention takes them; any strides whose last one is 1.
attention_varlen: FlashAttention's varlen form; q [total_q, heads_q, d], k, v [total_k, heads_kv, d],
int32 cumulative offsets. attention_paged: q packed as for varlen; k_cache, v_cache [num_pages,
page_size, heads_kv, d] (heads_first=True: [num_pages, heads_kv, page_size, d]), an int32 block
table [batch, max_pages_per_seq] and int32 kv_lens [batch]. Causal is per sequence.
Every call also takes the model features: window=(left, right) keys around each row's diagonal
key (-1: unbounded), softcap=c for c * tanh(s / c) (0: none), and sinks, a float32 [heads_q]
tensor of sink logits (None: none); fajit.h says what each means. v (and out) may have a head dim
of their own (DeepSeek's MLA prefill: 192 for q and k, 128 for v): out then takes v's.
FP8: q, k and v of torch.float8_e4m3fn give an out of bfloat16 (or the float16 or bfloat16 out
passed), with descale=(q_descale, k_descale, v_descale), float32 tensors [heads_kv] or [1] (None
for a factor of 1) that the call multiplies q, k and v by.
The kernel runs on the current CUDA stream of the tensors' device.
"""
import ctypes
import math
import os

import torch

DTYPES = {torch.float16: 0, torch.bfloat16: 1, torch.float32: 2, torch.float8_e4m3fn: 3}
FP8 = torch.float8_e4m3fn
CAUSAL_MODES = {"none": 0, "top-left": 1, "bottom-right": 2}
KV_DENSE, KV_RAGGED, KV_PAGED = 0, 1, 2


class _Strides(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("head", ctypes.c_int64), ("sequence", ctypes.c_int64)]


class _Setting(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _AttentionArgs(ctypes.Structure):
    # Mirrors fajit_attention_args field for field; the library checks struct_size.
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("dtype", ctypes.c_int32),
        ("q", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("v", ctypes.c_void_p),
        ("o", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("q_strides", _Strides),
        ("k_strides", _Strides),
        ("v_strides", _Strides),
        ("o_strides", _Strides),
        ("lse_batch", ctypes.c_int32),
        ("lse_heads", ctypes.c_int32),
        ("lse_length", ctypes.c_int32),
        ("batch", ctypes.c_int32),
        ("heads_q", ctypes.c_int32),
        ("heads_kv", ctypes.c_int32),
        ("len_q", ctypes.c_int32),
        ("len_k", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("causal", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("device", ctypes.c_int32),
        ("kv_layout", ctypes.c_int32),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p),
        ("kv_lens", ctypes.c_void_p),
        ("total_q", ctypes.c_int32),
        ("total_k", ctypes.c_int32),
        ("max_pages_per_seq", ctypes.c_int32),
        ("num_pages", ctypes.c_int32),
        ("page_size", ctypes.c_int32),
        ("use_window", ctypes.c_int32),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("softcap", ctypes.c_float),
        ("sinks", ctypes.c_void_p),
        ("head_dim_v", ctypes.c_int32),
        ("o_dtype", ctypes.c_int32),
        ("q_descale", ctypes.c_void_p),
        ("k_descale", ctypes.c_void_p),
        ("v_descale", ctypes.c_void_p),
        ("descale_heads", ctypes.c_int32),
    ]


class FajitError(RuntimeError):
    """A failed fa-jit call: status is the fajit_status name, the message names the field."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status


def default_library_path():
    return os.environ.get("FAJIT_LIBRARY", os.path.join("build", "src", "libfajit.so"))


def output_like(q, v):
    """The output of attention on q and v: like q (its strides too), with v's head dim; bfloat16 for FP8 inputs."""
    dtype = torch.bfloat16 if q.dtype == FP8 else q.dtype
    if v.shape[-1] == q.shape[-1]:
        return torch.empty_like(q, dtype=dtype)
    return q.new_empty(q.shape[:-1] + (v.shape[-1],), dtype=dtype)


def _set_dtypes(args, q, k, v, out):
    """fajit_attention_args.dtype and o_dtype: one dtype for q, k and v; out's is the same, or
    float16 / bfloat16 for FP8 inputs."""
    fp8_out = (torch.float16, torch.bfloat16)
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in DTYPES or (
            out.dtype not in fp8_out if q.dtype == FP8 else out.dtype != q.dtype):
        raise ValueError(f"q, k and v must share one of {list(DTYPES)}, and out have theirs (float16 or bfloat16 "
                         f"for {FP8}); got {q.dtype}, {k.dtype}, {v.dtype}, {out.dtype}")
    args.dtype = DTYPES[q.dtype]
    args.o_dtype = DTYPES[out.dtype] if q.dtype == FP8 else 0


def _value_head_dim(q, v):
    """fajit_attention_args.head_dim_v: v's head dim where it differs from q's, else 0."""
    return 0 if v.shape[-1] == q.shape[-1] else v.shape[-1]


def _device_of(tensors, what):
    """The CUDA device index all of tensors (None: not given) are on (get_device: an int, where
    .device builds an object). Checked after the shapes, so those are checked on any device."""
    tensors = [t for t in tensors if t is not None]
    index = tensors[0].get_device()
    if index < 0 or any(t.get_device() != index for t in tensors[1:]):
        raise ValueError(f"{what} must be on one CUDA device")
    return index


# The current stream's handle without the Stream object that torch.cuda.current_stream
# builds: that was 4.5 us of the 20 us a decode call spent in this binding (H200 host).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(device):
    return _raw_stream(device) if _raw_stream else torch.cuda.current_stream(device).cuda_stream


def _require_shape(name, tensor, shape, meaning):
    """The library sees pointers and sizes only: a tensor smaller than the sizes say would be
    read or written past its end, so each is checked against the sizes q sets."""
    if tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(tensor.shape)}: expected {tuple(shape)}, {meaning}")


def _require_rows(name, tensor, rank, layout):
    """rank dimensions, the last (the head dimension) contiguous."""
    if tensor.dim() != rank or tensor.stride(-1) != 1:
        raise ValueError(f"{name} must be {layout} with a contiguous head dimension, got shape "
                         f"{tuple(tensor.shape)} and strides {tensor.stride()}")


def _require_index(name, tensor, shape, meaning):
    """An index tensor: contiguous int32 of the given shape."""
    if tensor.dtype != torch.int32 or not tensor.is_contiguous():
        raise ValueError(f"{name} must be a contiguous int32 tensor {meaning}")
    _require_shape(name, tensor, shape, meaning)


def _put_strides(field, batch, head, sequence):
    """Fills one of the arguments' stride fields in place: building a _Strides and assigning it
    costs twice as much, and a decode call sets four of them."""
    field.batch, field.head, field.sequence = batch, head, sequence


def _put_dense_strides(field, tensor, name):
    if tensor.dim() != 4:
        raise ValueError(f"{name} must be 4-D [batch, heads, length, head_dim], got shape {tuple(tensor.shape)}")
    strides = tensor.stride()
    if strides[3] != 1 and tensor.size(3) > 1:
        raise ValueError(f"{name}.stride(-1) = {strides[3]}: the head dimension must be contiguous")
    _put_strides(field, strides[0], strides[1], strides[2])


class Runtime:
    """One fa-jit runtime. settings are FAJIT_* names (see fajit.h), over the environment."""

    def __init__(self, library=None, **settings):
        self._lib = ctypes.CDLL(library or default_library_path())
        lib = self._lib
        lib.fajit_version.restype = ctypes.c_char_p
        lib.fajit_last_error.restype = ctypes.c_char_p
        lib.fajit_status_name.restype = ctypes.c_char_p
        lib.fajit_status_name.argtypes = [ctypes.c_int]
        lib.fajit_runtime_create.argtypes = [ctypes.POINTER(_Setting), ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        lib.fajit_runtime_destroy.argtypes = [ctypes.c_void_p]
        lib.fajit_warm.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
        lib.fajit_attention.argtypes = [ctypes.c_void_p, ctypes.POINTER(_AttentionArgs), ctypes.c_void_p]
        lib.fajit_selected_variant.argtypes = [ctypes.c_void_p, ctypes.POINTER(_AttentionArgs), ctypes.c_char_p,
                                               ctypes.c_size_t]
        items = [(name.encode(), str(value).encode()) for name, value in settings.items()]
        array = (_Setting * max(1, len(items)))(*[_Setting(n, v) for n, v in items])
        handle = ctypes.c_void_p()
        self._check(lib.fajit_runtime_create(array, len(items), ctypes.byref(handle)))
        self._handle = handle

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.fajit_runtime_destroy(handle)
            self._handle = None

    @property
    def version(self):
        return self._lib.fajit_version().decode()

    def _check(self, status):
        if status != 0:
            raise FajitError(self._lib.fajit_status_name(status).decode(), self._lib.fajit_last_error().decode())

    def _args(self, q, k, v, out, lse, causal, scale):
        if causal not in CAUSAL_MODES:
            raise ValueError(f"causal={causal!r}: expected one of {list(CAUSAL_MODES)}")
        args = _AttentionArgs()
        args.struct_size = ctypes.sizeof(_AttentionArgs)
        _set_dtypes(args, q, k, v, out)
        args.q, args.k, args.v, args.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        _put_dense_strides(args.q_strides, q, "q")
        _put_dense_strides(args.k_strides, k, "k")
        _put_dense_strides(args.v_strides, v, "v")
        _put_dense_strides(args.o_strides, out, "out")
        batch, heads_q, len_q, head_dim = q.shape
        heads_kv, len_k, value_dim = k.shape[1], k.shape[2], v.shape[3]
        _require_shape("k", k, (batch, heads_kv, len_k, head_dim), "[batch, heads_kv, len_k, head_dim] as q's")
        _require_shape("v", v, (batch, heads_kv, len_k, value_dim), "[batch, heads_kv, len_k, head_dim_v] as k's")
        _require_shape("out", out, (batch, heads_q, len_q, value_dim), "[batch, heads_q, len_q, head_dim_v]")
        if lse is not None:
            if lse.dtype != torch.float32 or not lse.is_contiguous():
                raise ValueError("lse must be a contiguous float32 tensor [batch, heads_q, len_q]")
            args.lse = lse.data_ptr()
            args.lse_batch, args.lse_heads, args.lse_length = lse.shape
        args.batch, args.heads_q, args.len_q, args.head_dim = batch, heads_q, len_q, head_dim
        args.head_dim_v = _value_head_dim(q, v)
        args.heads_kv, args.len_k = heads_kv, len_k
        args.causal = CAUSAL_MODES[causal]
        args.scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
        args.device = _device_of((q, k, v, out, lse), "q, k, v, out and lse")
        return args

    def _packed_args(self, q, k, v, out, lse, causal, scale, cu_seqlens_q, max_seqlen_q, max_seqlen_k):
        """Arguments of a batched call: q, out [total_q, heads_q, d]; the caller checks and sets k
        and v's layout, then the device of every tensor."""
        if causal not in CAUSAL_MODES:
            raise ValueError(f"causal={causal!r}: expected one of {list(CAUSAL_MODES)}")
        _require_rows("q", q, 3, "[total_q, heads_q, head_dim]")
        _require_rows("out", out, 3, "[total_q, heads_q, head_dim_v]")
        total_q, heads_q, head_dim = q.shape
        _require_shape("out", out, (total_q, heads_q, v.shape[-1]), "[total_q, heads_q, head_dim_v] as q's")
        # One dimension of at least two offsets: [batch + 1] with batch >= 1.
        _require_index("cu_seqlens_q", cu_seqlens_q, (max(2, cu_seqlens_q.numel()),), "[batch + 1], batch >= 1")
        args = _AttentionArgs()
        args.struct_size = ctypes.sizeof(_AttentionArgs)
        _set_dtypes(args, q, k, v, out)
        args.q, args.o = q.data_ptr(), out.data_ptr()
        _put_strides(args.q_strides, 0, q.stride(1), q.stride(0))
        _put_strides(args.o_strides, 0, out.stride(1), out.stride(0))
        if lse is not None:
            if lse.dtype != torch.float32 or not lse.is_contiguous() or lse.dim() != 2:
                raise ValueError("lse must be a contiguous float32 tensor [heads_q, total_q]")
            args.lse = lse.data_ptr()
            args.lse_batch, args.lse_heads, args.lse_length = 1, lse.shape[0], lse.shape[1]
        args.batch = cu_seqlens_q.numel() - 1
        args.heads_q, args.head_dim = heads_q, head_dim
        args.head_dim_v = _value_head_dim(q, v)
        args.len_q, args.len_k = max_seqlen_q, max_seqlen_k
        args.cu_seqlens_q, args.total_q = cu_seqlens_q.data_ptr(), total_q
        args.causal = CAUSAL_MODES[causal]
        args.scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
        return args

    def attention_varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal="none",
                         scale=None, out=None, lse=None, window=None, softcap=0.0, sinks=None, descale=None):
        """q [total_q, heads_q, d]; k, v [total_k, heads_kv, d]; int32 cumulative offsets [batch + 1]."""
        out = output_like(q, v) if out is None else out
        args = self._packed_args(q, k, v, out, lse, causal, scale, cu_seqlens_q, max_seqlen_q, max_seqlen_k)
        _require_index("cu_seqlens_k", cu_seqlens_k, (args.batch + 1,), "[batch + 1] as cu_seqlens_q")
        _require_rows("k", k, 3, "[total_k, heads_kv, head_dim]")
        _require_rows("v", v, 3, "[total_k, heads_kv, head_dim_v]")
        _require_shape("k", k, k.shape[:2] + (args.head_dim,), "[total_k, heads_kv, head_dim] as q's")
        _require_shape("v", v, k.shape[:2] + (v.shape[2],), "[total_k, heads_kv, head_dim_v] as k's")
        args.device = _device_of((q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k), "q, k, v, out, lse and the offsets")
        args.kv_layout = KV_RAGGED
        args.k, args.v = k.data_ptr(), v.data_ptr()
        args.heads_kv = k.shape[1]
        _put_strides(args.k_strides, 0, k.stride(1), k.stride(0))
        _put_strides(args.v_strides, 0, v.stride(1), v.stride(0))
        args.cu_seqlens_k = cu_seqlens_k.data_ptr()
        args.total_k = k.shape[0]
        self._launch(self._set_features(args, window, softcap, sinks, descale))
        return out

    def attention_paged(self, q, k_cache, v_cache, cu_seqlens_q, block_table, kv_lens, max_seqlen_q, causal="none",
                        scale=None, out=None, lse=None, heads_first=False, max_seqlen_k=None, window=None, softcap=0.0,
                        sinks=None, descale=None):
        """q [total_q, heads_q, d]; caches [pages, page_size, heads_kv, d] (heads_first: heads before slots)."""
        out = output_like(q, v_cache) if out is None else out
        slot, head = (2, 1) if heads_first else (1, 2)
        layout = "[pages, heads_kv, page_size, head_dim]" if heads_first else "[pages, page_size, heads_kv, head_dim]"
        _require_rows("k_cache", k_cache, 4, layout)
        _require_rows("v_cache", v_cache, 4, layout)
        _require_shape("k_cache", k_cache, k_cache.shape[:3] + (q.shape[-1],), f"{layout} with q's head dim")
        _require_shape("v_cache", v_cache, k_cache.shape[:3] + (v_cache.shape[3],), f"{layout} as k_cache's")
        if block_table.dim() != 2:
            raise ValueError(f"block_table has shape {tuple(block_table.shape)}: expected [batch, max_pages_per_seq]")
        page_size = k_cache.shape[slot]
        max_pages = block_table.shape[1]
        args = self._packed_args(q, k_cache, v_cache, out, lse, causal, scale, cu_seqlens_q, max_seqlen_q,
                                 max_seqlen_k or max_pages * page_size)
        _require_index("block_table", block_table, (args.batch, max_pages), "[batch, max_pages_per_seq]")
        _require_index("kv_lens", kv_lens, (args.batch,), "[batch]")
        args.device = _device_of((q, k_cache, v_cache, out, lse, cu_seqlens_q, block_table, kv_lens),
                                 "q, the caches, out, lse and the index tensors")
        args.kv_layout = KV_PAGED
        args.k, args.v = k_cache.data_ptr(), v_cache.data_ptr()
        args.heads_kv = k_cache.shape[head]
        k_strides, v_strides = k_cache.stride(), v_cache.stride()
        _put_strides(args.k_strides, k_strides[0], k_strides[head], k_strides[slot])
        _put_strides(args.v_strides, v_strides[0], v_strides[head], v_strides[slot])
        args.block_table, args.kv_lens = block_table.data_ptr(), kv_lens.data_ptr()
        args.max_pages_per_seq, args.num_pages, args.page_size = max_pages, k_cache.shape[0], page_size
        self._launch(self._set_features(args, window, softcap, sinks, descale))
        return out

    @staticmethod
    def _set_features(args, window, softcap, sinks, descale):
        if window is not None:
            left, right = window
            args.use_window, args.window_left, args.window_right = 1, int(left), int(right)
        args.softcap = float(softcap)
        if sinks is not None:
            if sinks.dtype != torch.float32 or not sinks.is_contiguous() or sinks.shape != (args.heads_q,):
                raise ValueError(f"sinks must be a contiguous float32 tensor [heads_q] = [{args.heads_q}]")
            if sinks.get_device() != args.device:
                raise ValueError("sinks must be on q's device")
            args.sinks = sinks.data_ptr()
        if descale is not None:
            factors = [f for f in descale if f is not None]
            for f in factors:
                if f.dtype != torch.float32 or not f.is_contiguous() or f.dim() != 1 or f.get_device() != args.device:
                    raise ValueError("descale factors must be contiguous float32 tensors [heads_kv] or [1] on q's device")
            if any(f.numel() != factors[0].numel() for f in factors):
                raise ValueError(f"descale factors must all have one element per KV head or all one, got "
                                 f"{[f.numel() for f in factors]}")
            if factors:
                args.descale_heads = factors[0].numel()
                args.q_descale, args.k_descale, args.v_descale = (0 if f is None else f.data_ptr() for f in descale)
        return args

    def _launch(self, args):
        self._check(self._lib.fajit_attention(self._handle, ctypes.byref(args), _current_stream(args.device)))

    def attention(self, q, k, v, causal="none", scale=None, out=None, lse=None, window=None, softcap=0.0, sinks=None,
                  descale=None):
        """Returns out (allocated by output_like when not given); lse, when given, is filled too."""
        if out is None:
            out = output_like(q, v)
        self._launch(self._set_features(self._args(q, k, v, out, lse, causal, scale), window, softcap, sinks, descale))
        return out

    def selected_variant(self, q, k, v, causal="none", scale=None, window=None, softcap=0.0, sinks=None,
                         descale=None):
        """The canonical spec fa-jit runs for these tensors (after any fallback)."""
        # Only out's strides and dtype are read, but they are checked as a call's would be.
        out = output_like(q, v)
        args = self._set_features(self._args(q, k, v, out, None, causal, scale), window, softcap, sinks, descale)
        buffer = ctypes.create_string_buffer(512)
        self._check(self._lib.fajit_selected_variant(self._handle, ctypes.byref(args), buffer, len(buffer)))
        return buffer.value.decode()

    def warm(self, specs):
        array = (ctypes.c_char_p * max(1, len(specs)))(*[s.encode() for s in specs])
        self._check(self._lib.fajit_warm(self._handle, array, len(specs)))
