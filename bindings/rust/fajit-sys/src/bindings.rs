
pub const FAJIT_SUCCESS: fajit_status = 0;
pub const FAJIT_ERROR_INVALID_ARGUMENT: fajit_status = 1;
pub const FAJIT_ERROR_INVALID_OPTION: fajit_status = 2;
pub const FAJIT_ERROR_NO_DEVICE: fajit_status = 3;
pub const FAJIT_ERROR_UNSUPPORTED: fajit_status = 4;
pub const FAJIT_ERROR_COMPILE_FAILED: fajit_status = 5;
pub const FAJIT_ERROR_LOAD_FAILED: fajit_status = 6;
pub const FAJIT_ERROR_LAUNCH_FAILED: fajit_status = 7;
pub const FAJIT_ERROR_RUNTIME: fajit_status = 8;
pub type fajit_status = ::std::os::raw::c_uint;
pub const FAJIT_DTYPE_F16: _bindgen_ty_1 = 0;
pub const FAJIT_DTYPE_BF16: _bindgen_ty_1 = 1;
pub const FAJIT_DTYPE_F32: _bindgen_ty_1 = 2;
pub const FAJIT_DTYPE_E4M3: _bindgen_ty_1 = 3;
pub type _bindgen_ty_1 = ::std::os::raw::c_uint;
pub const FAJIT_KV_DENSE: _bindgen_ty_2 = 0;
pub const FAJIT_KV_RAGGED: _bindgen_ty_2 = 1;
pub const FAJIT_KV_PAGED: _bindgen_ty_2 = 2;
pub type _bindgen_ty_2 = ::std::os::raw::c_uint;
pub const FAJIT_CAUSAL_NONE: _bindgen_ty_3 = 0;
pub const FAJIT_CAUSAL_TOP_LEFT: _bindgen_ty_3 = 1;
pub const FAJIT_CAUSAL_BOTTOM_RIGHT: _bindgen_ty_3 = 2;
pub type _bindgen_ty_3 = ::std::os::raw::c_uint;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct fajit_runtime {
    _unused: [u8; 0],
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct fajit_setting {
    pub name: *const ::std::os::raw::c_char,
    pub value: *const ::std::os::raw::c_char,
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct fajit_strides {
    pub batch: i64,
    pub head: i64,
    pub sequence: i64,
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct fajit_attention_args {
    pub struct_size: u32,
    pub dtype: i32,
    pub q: *const ::std::os::raw::c_void,
    pub k: *const ::std::os::raw::c_void,
    pub v: *const ::std::os::raw::c_void,
    pub o: *mut ::std::os::raw::c_void,
    pub lse: *mut f32,
    pub q_strides: fajit_strides,
    pub k_strides: fajit_strides,
    pub v_strides: fajit_strides,
    pub o_strides: fajit_strides,
    pub lse_batch: i32,
    pub lse_heads: i32,
    pub lse_length: i32,
    pub batch: i32,
    pub heads_q: i32,
    pub heads_kv: i32,
    pub len_q: i32,
    pub len_k: i32,
    pub head_dim: i32,
    pub causal: i32,
    pub scale: f32,
    pub device: i32,
    pub kv_layout: i32,
    pub cu_seqlens_q: *const i32,
    pub cu_seqlens_k: *const i32,
    pub block_table: *const i32,
    pub kv_lens: *const i32,
    pub total_q: i32,
    pub total_k: i32,
    pub max_pages_per_seq: i32,
    pub num_pages: i32,
    pub page_size: i32,
    pub use_window: i32,
    pub window_left: i32,
    pub window_right: i32,
    pub softcap: f32,
    pub sinks: *const f32,
    pub head_dim_v: i32,
    pub o_dtype: i32,
    pub q_descale: *const f32,
    pub k_descale: *const f32,
    pub v_descale: *const f32,
    pub descale_heads: i32,
}
unsafe extern "C" {
    pub fn fajit_version() -> *const ::std::os::raw::c_char;
}
unsafe extern "C" {
    pub fn fajit_last_error() -> *const ::std::os::raw::c_char;
}
unsafe extern "C" {
    pub fn fajit_status_name(status: fajit_status) -> *const ::std::os::raw::c_char;
}
unsafe extern "C" {
    pub fn fajit_runtime_create(
        settings: *const fajit_setting,
        count: usize,
        runtime: *mut *mut fajit_runtime,
    ) -> fajit_status;
}
unsafe extern "C" {
    pub fn fajit_runtime_destroy(runtime: *mut fajit_runtime);
}
unsafe extern "C" {
    pub fn fajit_warm(
        runtime: *mut fajit_runtime,
        specs: *const *const ::std::os::raw::c_char,
        count: usize,
    ) -> fajit_status;
}
unsafe extern "C" {
    pub fn fajit_attention(
        runtime: *mut fajit_runtime,
        args: *const fajit_attention_args,
        stream: *mut ::std::os::raw::c_void,
    ) -> fajit_status;
}
unsafe extern "C" {
    pub fn fajit_selected_variant(
        runtime: *mut fajit_runtime,
        args: *const fajit_attention_args,
        buffer: *mut ::std::os::raw::c_char,
        size: usize,
    ) -> fajit_status;
}
