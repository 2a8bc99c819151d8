"""ctypes binding of fa-jit's C ABI (include/fajit/fajit.h) for PyTorch tensors.

    rt = fajit.Runtime("build/src/libfajit.so", FAJIT_FAMILY="wmma-gfx11")
    o = rt.attention(q, k, v, causal="bottom-right")

q is [batch, heads_q, len_q, head_dim] and k, v are [batch, heads_kv, len_k, head_dim], as
torch.nn.functional.scaled_dot_product_attention takes them; any strides whose last one is 1.
The kernel runs on the current CUDA stream of the tensors' device.
"""
import ctypes
import math
import os

import torch

DTYPES = {torch.float16: 0, torch.bfloat16: 1, torch.float32: 2}
CAUSAL_MODES = {"none": 0, "top-left": 1, "bottom-right": 2}


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
    ]


class FajitError(RuntimeError):
    """A failed fa-jit call: status is the fajit_status name, the message names the field."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status


def default_library_path():
    return os.environ.get("FAJIT_LIBRARY", os.path.join("build", "src", "libfajit.so"))


def _strides_of(tensor, name):
    if tensor.dim() != 4:
        raise ValueError(f"{name} must be 4-D [batch, heads, length, head_dim], got shape {tuple(tensor.shape)}")
    if tensor.stride(3) != 1 and tensor.size(3) > 1:
        raise ValueError(f"{name}.stride(-1) = {tensor.stride(3)}: the head dimension must be contiguous")
    return _Strides(tensor.stride(0), tensor.stride(1), tensor.stride(2))


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
        if not (q.dtype == k.dtype == v.dtype == out.dtype) or q.dtype not in DTYPES:
            raise ValueError(f"q, k, v and out must share one of {list(DTYPES)}; got {q.dtype}, {k.dtype}, "
                             f"{v.dtype}, {out.dtype}")
        if len({t.device for t in (q, k, v, out)}) != 1 or q.device.type != "cuda":
            raise ValueError("q, k, v and out must be on one CUDA device")
        if causal not in CAUSAL_MODES:
            raise ValueError(f"causal={causal!r}: expected one of {list(CAUSAL_MODES)}")
        batch, heads_q, len_q, head_dim = q.shape
        args = _AttentionArgs()
        args.struct_size = ctypes.sizeof(_AttentionArgs)
        args.dtype = DTYPES[q.dtype]
        args.q, args.k, args.v, args.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        args.q_strides = _strides_of(q, "q")
        args.k_strides = _strides_of(k, "k")
        args.v_strides = _strides_of(v, "v")
        args.o_strides = _strides_of(out, "out")
        if lse is not None:
            if lse.dtype != torch.float32 or not lse.is_contiguous():
                raise ValueError("lse must be a contiguous float32 tensor [batch, heads_q, len_q]")
            args.lse = lse.data_ptr()
            args.lse_batch, args.lse_heads, args.lse_length = lse.shape
        args.batch, args.heads_q, args.len_q, args.head_dim = batch, heads_q, len_q, head_dim
        args.heads_kv, args.len_k = k.shape[1], k.shape[2]
        args.causal = CAUSAL_MODES[causal]
        args.scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
        args.device = q.device.index or 0
        return args

    def attention(self, q, k, v, causal="none", scale=None, out=None, lse=None):
        """Returns out (allocated like q when not given); lse, when given, is filled too."""
        if out is None:
            out = torch.empty_like(q)
        args = self._args(q, k, v, out, lse, causal, scale)
        stream = torch.cuda.current_stream(q.device).cuda_stream
        self._check(self._lib.fajit_attention(self._handle, ctypes.byref(args), ctypes.c_void_p(stream)))
        return out

    def selected_variant(self, q, k, v, causal="none", scale=None):
        """The canonical spec fa-jit runs for these tensors (after any fallback)."""
        args = self._args(q, k, v, q, None, causal, scale)
        buffer = ctypes.create_string_buffer(512)
        self._check(self._lib.fajit_selected_variant(self._handle, ctypes.byref(args), buffer, len(buffer)))
        return buffer.value.decode()

    def warm(self, specs):
        array = (ctypes.c_char_p * max(1, len(specs)))(*[s.encode() for s in specs])
        self._check(self._lib.fajit_warm(self._handle, array, len(specs)))
