//! fa-jit from Rust: flash attention compiled at run time for the device and shape.
//!
//! A safe wrapper over the C ABI (`fajit-sys`). Tensors are device pointers with element
//! strides, and a call runs on the caller's stream (a `CUstream` or `hipStream_t`, null for
//! the default stream), so the crate depends on no GPU crate: an engine passes the
//! addresses of its own buffers.
//!
//! ```no_run
//! use fajit::{Attention, Causal, DType, Runtime, Shape};
//! # fn buffers() -> (u64, u64, u64, u64) { (0, 0, 0, 0) }
//! let (q, k, v, o) = buffers(); // the engine's device buffers, [batch, heads, len, head_dim]
//! let runtime = Runtime::new(&[])?;
//! let shape = Shape { batch: 1, heads_q: 32, heads_kv: 8, len_q: 1, len_k: 8192, head_dim: 128 };
//! let call = Attention::dense(DType::Bf16, shape).q(q).k(k).v(v).o(o).causal(Causal::BottomRight);
//! runtime.attention(&call, std::ptr::null_mut())?;
//! # Ok::<(), fajit::Error>(())
//! ```
//!
//! Strides default to contiguous tensors; `.q_strides(...)` and the like set others. The
//! library checks every argument before anything touches a device, and an error names
//! the field and its value.
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::ptr::NonNull;

use fajit_sys as sys;

/// What a failed call reports: the status, and the library's message naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

/// fa-jit's statuses (`fajit_status`); a status of a newer library is `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    InvalidArgument,
    InvalidOption,
    NoDevice,
    Unsupported,
    CompileFailed,
    LoadFailed,
    LaunchFailed,
    Runtime,
    Other(u32),
}

impl Status {
    fn from_raw(status: sys::fajit_status) -> Self {
        match status {
            sys::FAJIT_ERROR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::FAJIT_ERROR_INVALID_OPTION => Status::InvalidOption,
            sys::FAJIT_ERROR_NO_DEVICE => Status::NoDevice,
            sys::FAJIT_ERROR_UNSUPPORTED => Status::Unsupported,
            sys::FAJIT_ERROR_COMPILE_FAILED => Status::CompileFailed,
            sys::FAJIT_ERROR_LOAD_FAILED => Status::LoadFailed,
            sys::FAJIT_ERROR_LAUNCH_FAILED => Status::LaunchFailed,
            sys::FAJIT_ERROR_RUNTIME => Status::Runtime,
            other => Status::Other(other),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The result of a C call: Ok, or the status with this thread's last-error message.
fn check(status: sys::fajit_status) -> Result<()> {
    if status == sys::FAJIT_SUCCESS {
        return Ok(());
    }
    // SAFETY: fajit_last_error never returns null; the text lives until this thread's next call.
    let message = unsafe { CStr::from_ptr(sys::fajit_last_error()) }
        .to_string_lossy()
        .into_owned();
    Err(Error {
        status: Status::from_raw(status),
        message,
    })
}

fn invalid(message: String) -> Error {
    Error {
        status: Status::InvalidArgument,
        message,
    }
}

/// The library's version, e.g. "0.1.0".
pub fn version() -> &'static str {
    // SAFETY: a static, NUL-terminated string that is never null.
    unsafe { CStr::from_ptr(sys::fajit_version()) }.to_str().unwrap_or("")
}

/// Element type of q, k, v and o.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F16,
    Bf16,
    /// Runs the scalar family only.
    F32,
    /// OCP FP8 E4M3, for q, k and v: o is f16 or bf16 ([`Attention::output_dtype`]).
    E4m3,
}

impl DType {
    fn raw(self) -> i32 {
        (match self {
            DType::F16 => sys::FAJIT_DTYPE_F16,
            DType::Bf16 => sys::FAJIT_DTYPE_BF16,
            DType::F32 => sys::FAJIT_DTYPE_F32,
            DType::E4m3 => sys::FAJIT_DTYPE_E4M3,
        }) as i32
    }
}

/// Causal masking: query row i of len_q sees key j of len_k when
/// `None`: always; `TopLeft`: j <= i; `BottomRight`: j <= i + len_k - len_q.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Causal {
    None,
    TopLeft,
    BottomRight,
}

/// Element strides of one tensor (the head dimension is contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub batch: i64,
    pub head: i64,
    pub sequence: i64,
}

impl Strides {
    /// A contiguous [batch, heads, len, head_dim] tensor.
    pub fn contiguous(heads: i32, len: i32, head_dim: i32) -> Self {
        let (heads, len, head_dim) = (heads as i64, len as i64, head_dim as i64);
        Strides {
            batch: heads * len * head_dim,
            head: len * head_dim,
            sequence: head_dim,
        }
    }

    /// A packed [total, heads, head_dim] tensor of a batched call (no batch stride).
    pub fn packed(heads: i32, head_dim: i32) -> Self {
        Strides {
            batch: 0,
            head: head_dim as i64,
            sequence: heads as i64 * head_dim as i64,
        }
    }

    /// A slots-first paged cache [num_pages, page_size, heads, head_dim].
    pub fn paged_cache(page_size: i32, heads: i32, head_dim: i32) -> Self {
        let (page_size, heads, head_dim) = (page_size as i64, heads as i64, head_dim as i64);
        Strides {
            batch: page_size * heads * head_dim,
            head: head_dim,
            sequence: heads * head_dim,
        }
    }

    /// A tensor's default strides in a call of `layout`: contiguous for dense calls, packed
    /// for batched ones.
    fn default_for(layout: sys::_bindgen_ty_2, heads: i32, len: i32, head_dim: i32) -> Self {
        if layout == sys::FAJIT_KV_DENSE {
            Strides::contiguous(heads, len, head_dim)
        } else {
            Strides::packed(heads, head_dim)
        }
    }

    fn raw(self) -> sys::fajit_strides {
        sys::fajit_strides {
            batch: self.batch,
            head: self.head,
            sequence: self.sequence,
        }
    }
}

/// The sizes of a call. For batched calls len_q and len_k are the longest sequence's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub batch: i32,
    pub heads_q: i32,
    pub heads_kv: i32,
    pub len_q: i32,
    pub len_k: i32,
    pub head_dim: i32,
}

/// A ragged batch (FlashAttention's varlen form): q, o packed [total_q, heads_q, d], k, v
/// packed [total_k, heads_kv, d], split by int32 cumulative offsets [batch + 1].
#[derive(Clone, Copy, Debug)]
pub struct Ragged {
    pub cu_seqlens_q: u64,
    pub cu_seqlens_k: u64,
    pub total_q: i32,
    pub total_k: i32,
}

/// A paged KV cache (vLLM's form): k, v [num_pages, page_size, heads_kv, d] (or heads
/// before slots, by strides), an int32 block table [batch, max_pages_per_seq] and int32
/// kv_lens [batch]; q, o packed [total_q, heads_q, d] by cu_seqlens_q [batch + 1].
#[derive(Clone, Copy, Debug)]
pub struct Paged {
    pub cu_seqlens_q: u64,
    pub block_table: u64,
    pub kv_lens: u64,
    pub total_q: i32,
    pub max_pages_per_seq: i32,
    pub num_pages: i32,
    pub page_size: i32,
}

/// One attention call, built up field by field; the library checks it when it runs.
#[derive(Clone, Copy)]
pub struct Attention {
    raw: sys::fajit_attention_args,
}

impl Attention {
    fn new(dtype: DType, shape: Shape, layout: sys::_bindgen_ty_2) -> Self {
        // SAFETY: the struct is plain data; zero is every field's "unset".
        let mut raw: sys::fajit_attention_args = unsafe { std::mem::zeroed() };
        raw.struct_size = std::mem::size_of::<sys::fajit_attention_args>() as u32;
        raw.dtype = dtype.raw();
        raw.batch = shape.batch;
        raw.heads_q = shape.heads_q;
        raw.heads_kv = shape.heads_kv;
        raw.len_q = shape.len_q;
        raw.len_k = shape.len_k;
        raw.head_dim = shape.head_dim;
        raw.kv_layout = layout as i32;
        raw.scale = 1.0 / (shape.head_dim.max(1) as f32).sqrt();
        let mut call = Attention { raw }.causal(Causal::None);
        let q_strides = Strides::default_for(layout, shape.heads_q, shape.len_q, shape.head_dim);
        call.raw.q_strides = q_strides.raw();
        call.raw.o_strides = q_strides.raw();
        let kv_strides = Strides::default_for(layout, shape.heads_kv, shape.len_k, shape.head_dim);
        call.raw.k_strides = kv_strides.raw();
        call.raw.v_strides = kv_strides.raw();
        call
    }

    /// q, k, v, o all [batch, heads, len, head_dim]; strides default to contiguous.
    pub fn dense(dtype: DType, shape: Shape) -> Self {
        Self::new(dtype, shape, sys::FAJIT_KV_DENSE)
    }

    /// A ragged batch; strides default to packed.
    pub fn ragged(dtype: DType, shape: Shape, ragged: Ragged) -> Self {
        let mut call = Self::new(dtype, shape, sys::FAJIT_KV_RAGGED);
        call.raw.cu_seqlens_q = ragged.cu_seqlens_q as *const i32;
        call.raw.cu_seqlens_k = ragged.cu_seqlens_k as *const i32;
        call.raw.total_q = ragged.total_q;
        call.raw.total_k = ragged.total_k;
        call
    }

    /// A paged KV cache; strides default to packed q, o and a slots-first cache
    /// (`.k_strides(Strides { batch: page stride, head, sequence: slot stride })` for others).
    pub fn paged(dtype: DType, shape: Shape, paged: Paged) -> Self {
        let mut call = Self::new(dtype, shape, sys::FAJIT_KV_PAGED);
        let cache = Strides::paged_cache(paged.page_size, shape.heads_kv, shape.head_dim);
        call.raw.k_strides = cache.raw();
        call.raw.v_strides = cache.raw();
        call.raw.cu_seqlens_q = paged.cu_seqlens_q as *const i32;
        call.raw.block_table = paged.block_table as *const i32;
        call.raw.kv_lens = paged.kv_lens as *const i32;
        call.raw.total_q = paged.total_q;
        call.raw.max_pages_per_seq = paged.max_pages_per_seq;
        call.raw.num_pages = paged.num_pages;
        call.raw.page_size = paged.page_size;
        call
    }

    pub fn q(mut self, address: u64) -> Self {
        self.raw.q = address as *const c_void;
        self
    }
    pub fn k(mut self, address: u64) -> Self {
        self.raw.k = address as *const c_void;
        self
    }
    pub fn v(mut self, address: u64) -> Self {
        self.raw.v = address as *const c_void;
        self
    }
    pub fn o(mut self, address: u64) -> Self {
        self.raw.o = address as *mut c_void;
        self
    }
    pub fn q_strides(mut self, strides: Strides) -> Self {
        self.raw.q_strides = strides.raw();
        self
    }
    pub fn k_strides(mut self, strides: Strides) -> Self {
        self.raw.k_strides = strides.raw();
        self
    }
    pub fn v_strides(mut self, strides: Strides) -> Self {
        self.raw.v_strides = strides.raw();
        self
    }
    pub fn o_strides(mut self, strides: Strides) -> Self {
        self.raw.o_strides = strides.raw();
        self
    }

    /// Also write each row's natural-log sum-exp, f32: dense [batch, heads_q, len_q],
    /// batched [heads_q, total_q] (shape {1, heads_q, total_q}).
    pub fn lse(mut self, address: u64, shape: [i32; 3]) -> Self {
        self.raw.lse = address as *mut f32;
        [self.raw.lse_batch, self.raw.lse_heads, self.raw.lse_length] = shape;
        self
    }

    pub fn causal(mut self, causal: Causal) -> Self {
        self.raw.causal = match causal {
            Causal::None => sys::FAJIT_CAUSAL_NONE,
            Causal::TopLeft => sys::FAJIT_CAUSAL_TOP_LEFT,
            Causal::BottomRight => sys::FAJIT_CAUSAL_BOTTOM_RIGHT,
        } as i32;
        self
    }

    /// The softmax scale (default 1/sqrt(head_dim)).
    pub fn scale(mut self, scale: f32) -> Self {
        self.raw.scale = scale;
        self
    }

    /// The device ordinal within the backend that runs it (default 0).
    pub fn device(mut self, device: i32) -> Self {
        self.raw.device = device;
        self
    }

    /// A sliding window: query row i sees the keys from `left` before its diagonal key to
    /// `right` after it (-1 leaves a side unbounded), within the causal mask. The diagonal
    /// key is i + len_k - len_q, or i under [`Causal::TopLeft`]. Mistral's window of W
    /// keys is `window(W - 1, 0)` with a causal mask.
    pub fn window(mut self, left: i32, right: i32) -> Self {
        self.raw.use_window = 1;
        self.raw.window_left = left;
        self.raw.window_right = right;
        self
    }

    /// A logit soft-cap c > 0: each scaled score s becomes c tanh(s / c) (Gemma 2).
    pub fn softcap(mut self, cap: f32) -> Self {
        self.raw.softcap = cap;
        self
    }

    /// Attention sinks: a device address of [heads_q] f32 logits whose exp joins each row's
    /// softmax denominator, and its LSE (gpt-oss).
    pub fn sinks(mut self, address: u64) -> Self {
        self.raw.sinks = address as *const f32;
        self
    }

    /// The dtype of o for [`DType::E4m3`] inputs: [`DType::F16`] (the default) or [`DType::Bf16`].
    pub fn output_dtype(mut self, dtype: DType) -> Self {
        self.raw.o_dtype = dtype.raw();
        self
    }

    /// Dequantization factors of e4m3 inputs: device addresses of f32 factors (0 for a factor
    /// of 1), `heads` of them each: heads_kv (one per KV head) or 1 (one per tensor).
    pub fn descale(mut self, q: u64, k: u64, v: u64, heads: i32) -> Self {
        self.raw.q_descale = q as *const f32;
        self.raw.k_descale = k as *const f32;
        self.raw.v_descale = v as *const f32;
        self.raw.descale_heads = heads;
        self
    }

    /// V and O rows of `head_dim_v` elements where that differs from the shape's head_dim
    /// (DeepSeek's MLA prefill: 192 for q and k, 128 for v and o). Call it before setting
    /// v or o strides: it resets them to the layout's defaults for the new width.
    pub fn value_head_dim(mut self, head_dim_v: i32) -> Self {
        self.raw.head_dim_v = head_dim_v;
        let layout = self.raw.kv_layout as sys::_bindgen_ty_2;
        let o = Strides::default_for(layout, self.raw.heads_q, self.raw.len_q, head_dim_v);
        let v = if layout == sys::FAJIT_KV_PAGED {
            Strides::paged_cache(self.raw.page_size, self.raw.heads_kv, head_dim_v)
        } else {
            Strides::default_for(layout, self.raw.heads_kv, self.raw.len_k, head_dim_v)
        };
        self.raw.o_strides = o.raw();
        self.raw.v_strides = v.raw();
        self
    }
}

/// One fa-jit runtime: its caches, compilers and loaded kernels. Shared by any number of
/// threads; destroyed when dropped.
pub struct Runtime {
    raw: NonNull<sys::fajit_runtime>,
}

// SAFETY: the C ABI documents a runtime as usable from any number of threads at once.
unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

impl Runtime {
    /// A runtime from the FAJIT_* environment, with `settings` (name, value) replacing the
    /// variables of the same names, e.g. `&[("FAJIT_CACHE_DIR", "/var/cache/fa-jit")]`.
    pub fn new(settings: &[(&str, &str)]) -> Result<Self> {
        let owned: Vec<(CString, CString)> = settings
            .iter()
            .map(|(name, value)| {
                let text =
                    |what: &str| CString::new(what).map_err(|_| invalid(format!("setting {name}: contains NUL")));
                Ok((text(name)?, text(value)?))
            })
            .collect::<Result<_>>()?;
        let raw: Vec<sys::fajit_setting> = owned
            .iter()
            .map(|(name, value)| sys::fajit_setting {
                name: name.as_ptr(),
                value: value.as_ptr(),
            })
            .collect();
        let mut runtime = std::ptr::null_mut();
        // SAFETY: the settings outlive the call; runtime is a valid place for the result.
        check(unsafe { sys::fajit_runtime_create(raw.as_ptr(), raw.len(), &mut runtime) })?;
        NonNull::new(runtime)
            .map(|raw| Runtime { raw })
            .ok_or_else(|| invalid("fajit_runtime_create gave no runtime".into()))
    }

    /// Runs attention on `stream` (a `CUstream` or `hipStream_t`; null: the default stream).
    /// Returns once the launch is queued.
    pub fn attention(&self, call: &Attention, stream: *mut c_void) -> Result<()> {
        // SAFETY: the runtime is live and the arguments are a complete struct of this size.
        check(unsafe { sys::fajit_attention(self.raw.as_ptr(), &call.raw, stream) })
    }

    /// The canonical spec the call runs (after any fallback); prepares it as a call would.
    pub fn selected_variant(&self, call: &Attention) -> Result<String> {
        let mut buffer = vec![0u8; 512];
        // SAFETY: the buffer holds buffer.len() bytes for the NUL-terminated spec.
        check(unsafe {
            sys::fajit_selected_variant(self.raw.as_ptr(), &call.raw, buffer.as_mut_ptr().cast(), buffer.len())
        })?;
        let text = CStr::from_bytes_until_nul(&buffer).map_err(|_| invalid("spec not NUL-terminated".into()))?;
        Ok(text.to_string_lossy().into_owned())
    }

    /// Compiles each canonical spec (as `fa-jit emit` prints them) into the cache.
    pub fn warm(&self, specs: &[&str]) -> Result<()> {
        let owned: Vec<CString> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| CString::new(*spec).map_err(|_| invalid(format!("specs[{i}]: contains NUL"))))
            .collect::<Result<_>>()?;
        let raw: Vec<*const std::ffi::c_char> = owned.iter().map(|spec| spec.as_ptr()).collect();
        // SAFETY: the specs outlive the call.
        check(unsafe { sys::fajit_warm(self.raw.as_ptr(), raw.as_ptr(), raw.len()) })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: the runtime is live, and no call can be running: they borrow self.
        unsafe { sys::fajit_runtime_destroy(self.raw.as_ptr()) }
    }
}
