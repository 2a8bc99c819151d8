//! A dense call and a paged decode call through the crate on an NVIDIA GPU, each checked
//! against the same call run by fa-jit's scalar family (FAJIT_FAMILY=scalar). Device
//! memory comes from the CUDA driver, opened at run time, as an engine's own allocator
//! would provide it; the crate itself needs no GPU crate. Prints "skipped: why" and exits 0
//! where no driver or device exists; exits 1 when a result disagrees.
//!
//!   FAJIT_DIR=build/src LD_LIBRARY_PATH=build/src cargo run --offline --example attention_on_gpu
use fajit::{Attention, Causal, DType, Paged, Runtime, Shape};
use std::ffi::{c_char, c_int, c_void, CStr};

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;

/// The few driver calls the example needs (CUDA driver API, by symbol). Its buffers live
/// until the process ends.
struct Driver {
    alloc: unsafe extern "C" fn(*mut u64, usize) -> c_int,
    to_device: unsafe extern "C" fn(u64, *const c_void, usize) -> c_int,
    to_host: unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int,
    synchronize: unsafe extern "C" fn() -> c_int,
}

impl Driver {
    fn open() -> Result<Driver, String> {
        unsafe {
            let library = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
            if library.is_null() {
                return Err("no CUDA driver (libcuda.so.1)".into());
            }
            let symbol = |name: &CStr| {
                let address = dlsym(library, name.as_ptr());
                if address.is_null() {
                    Err(format!("libcuda has no {name:?}"))
                } else {
                    Ok(address)
                }
            };
            let init: unsafe extern "C" fn(u32) -> c_int = std::mem::transmute(symbol(c"cuInit")?);
            let device_get: unsafe extern "C" fn(*mut c_int, c_int) -> c_int =
                std::mem::transmute(symbol(c"cuDeviceGet")?);
            let retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int =
                std::mem::transmute(symbol(c"cuDevicePrimaryCtxRetain")?);
            let set_current: unsafe extern "C" fn(*mut c_void) -> c_int =
                std::mem::transmute(symbol(c"cuCtxSetCurrent")?);
            let mut device = 0;
            let mut context = std::ptr::null_mut();
            if init(0) != 0 || device_get(&mut device, 0) != 0 {
                return Err("the CUDA driver sees no device".into());
            }
            if retain(&mut context, device) != 0 || set_current(context) != 0 {
                return Err("no context on device 0".into());
            }
            Ok(Driver {
                alloc: std::mem::transmute(symbol(c"cuMemAlloc_v2")?),
                to_device: std::mem::transmute(symbol(c"cuMemcpyHtoD_v2")?),
                to_host: std::mem::transmute(symbol(c"cuMemcpyDtoH_v2")?),
                synchronize: std::mem::transmute(symbol(c"cuCtxSynchronize")?),
            })
        }
    }

    fn upload<T: Copy>(&self, values: &[T]) -> u64 {
        let bytes = std::mem::size_of_val(values).max(4);
        let mut address = 0u64;
        unsafe {
            assert_eq!((self.alloc)(&mut address, bytes), 0, "cuMemAlloc of {bytes} bytes");
            assert_eq!(
                (self.to_device)(address, values.as_ptr().cast(), std::mem::size_of_val(values)),
                0
            );
        }
        address
    }

    fn download_u16(&self, address: u64, count: usize) -> Vec<u16> {
        let mut values = vec![0u16; count];
        unsafe {
            assert_eq!((self.synchronize)(), 0, "the kernels ran");
            assert_eq!((self.to_host)(values.as_mut_ptr().cast(), address, 2 * count), 0);
        }
        values
    }
}

/// Deterministic bf16 values in [-2, 2), as raw bits (round to nearest even).
fn random_bf16(count: usize, seed: &mut u64) -> Vec<u16> {
    (0..count)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let value = ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0;
            let bits = value.to_bits();
            ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
        })
        .collect()
}

fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// Runs `call` (whose output is `out`, `count` elements) on the selected variant and on
/// the scalar family, prints the largest difference between them, and says whether it is
/// within `tolerance`.
fn agrees_with_scalar(
    label: &str,
    driver: &Driver,
    runtimes: (&Runtime, &Runtime),
    call: &Attention,
    out: u64,
    count: usize,
    tolerance: f32,
) -> bool {
    let (selected, scalar) = runtimes;
    let variant = selected.selected_variant(call).expect("a variant");
    selected
        .attention(call, std::ptr::null_mut())
        .expect("the selected variant runs");
    let got = driver.download_u16(out, count);
    scalar
        .attention(call, std::ptr::null_mut())
        .expect("the scalar family runs");
    let want = driver.download_u16(out, count);
    let error = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (bf16_to_f32(*a) - bf16_to_f32(*b)).abs())
        .fold(0.0, f32::max);
    println!("{label} {variant}: max abs difference from scalar {error:.4}");
    error <= tolerance
}

fn main() {
    let driver = match Driver::open() {
        Ok(driver) => driver,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let selected = Runtime::new(&[]).expect("a runtime");
    let scalar = Runtime::new(&[("FAJIT_FAMILY", "scalar")]).expect("a scalar runtime");
    let mut seed = 0x9e3779b97f4a7c15u64;
    // bf16 outputs of values below 2: a few units of bf16 rounding apart at most.
    let tolerance = 0.03;

    // Dense, GQA 8/2, a chunk of 64 queries at the end of 300 keys.
    let shape = Shape {
        batch: 1,
        heads_q: 8,
        heads_kv: 2,
        len_q: 64,
        len_k: 300,
        head_dim: 128,
    };
    let q = driver.upload(&random_bf16(8 * 64 * 128, &mut seed));
    let k = driver.upload(&random_bf16(2 * 300 * 128, &mut seed));
    let v = driver.upload(&random_bf16(2 * 300 * 128, &mut seed));
    let o = driver.upload(&vec![0u16; 8 * 64 * 128]);
    let call = Attention::dense(DType::Bf16, shape)
        .q(q)
        .k(k)
        .v(v)
        .o(o)
        .causal(Causal::BottomRight);
    let mut ok = agrees_with_scalar(
        "dense",
        &driver,
        (&selected, &scalar),
        &call,
        o,
        8 * 64 * 128,
        tolerance,
    );

    // Paged decode: one query row for each of 3 sequences of 1, 300 and 1000 keys, pages of
    // 16 keys in a shuffled block table.
    let lens = [1i32, 300, 1000];
    let pages_per_seq = 1000 / 16 + 1;
    let num_pages = 3 * pages_per_seq;
    let mut table: Vec<i32> = (0..num_pages).collect();
    for i in (1..table.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        table.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    let shape = Shape {
        batch: 3,
        heads_q: 8,
        heads_kv: 2,
        len_q: 1,
        len_k: 1000,
        head_dim: 128,
    };
    let cache_elements = num_pages as usize * 16 * 2 * 128;
    let paged = Paged {
        cu_seqlens_q: driver.upload(&[0i32, 1, 2, 3]),
        block_table: driver.upload(&table),
        kv_lens: driver.upload(&lens),
        total_q: 3,
        max_pages_per_seq: pages_per_seq,
        num_pages,
        page_size: 16,
    };
    let q = driver.upload(&random_bf16(3 * 8 * 128, &mut seed));
    let k = driver.upload(&random_bf16(cache_elements, &mut seed));
    let v = driver.upload(&random_bf16(cache_elements, &mut seed));
    let o = driver.upload(&vec![0u16; 3 * 8 * 128]);
    let call = Attention::paged(DType::Bf16, shape, paged)
        .q(q)
        .k(k)
        .v(v)
        .o(o)
        .causal(Causal::BottomRight);
    ok &= agrees_with_scalar("paged", &driver, (&selected, &scalar), &call, o, 3 * 8 * 128, tolerance);
    if !ok {
        println!("FAILED: a result differs from the scalar family's by more than {tolerance}");
        std::process::exit(1);
    }
    println!("both calls agree with the scalar family");
}
