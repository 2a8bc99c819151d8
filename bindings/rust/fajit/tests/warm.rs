//! warm() compiles tensor-core variants for two targets into a scratch cache, with no GPU:
//! the compilers (HIPRTC, NVRTC) are libraries, and the cache holds what they made. A
//! target whose backend the build lacks is skipped, saying so.
use fajit::Runtime;
use std::path::Path;

fn entries_under(dir: &Path) -> usize {
    let Ok(read) = std::fs::read_dir(dir) else { return 0 };
    read.flatten()
        .map(|entry| {
            if entry.path().is_dir() {
                entries_under(&entry.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn warm_compiles_a_gfx1151_and_an_sm_90a_variant() {
    let cache = std::env::temp_dir().join(format!("fajit-rust-warm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let runtime = Runtime::new(&[
        ("FAJIT_CACHE_DIR", cache.to_str().unwrap()),
        ("FAJIT_LOG_LEVEL", "error"),
    ])
    .expect("a runtime");
    for (arch, spec) in [
        (
            "gfx1151",
            "family=wmma-gfx11,d=128,dtype=f16,causal=bottom-right,margin=10,arch=gfx1151",
        ),
        (
            "sm_90a",
            "family=wgmma-sm90,d=128,dtype=bf16,causal=bottom-right,margin=10,arch=sm_90a",
        ),
    ] {
        match runtime.warm(&[spec]) {
            // A build without that backend, or a machine without its compiler library.
            Err(error) if error.message.contains(&format!("cannot compile for {arch}:")) => {
                println!("skipped {arch}: {}", error.message);
            }
            Err(error) => panic!("{spec}: {error}"),
            Ok(()) => {
                let stored = entries_under(&cache.join("v1").join(arch));
                assert!(stored >= 1, "no cache entry for {arch} under {}", cache.display());
            }
        }
    }
    drop(runtime);
    std::fs::remove_dir_all(&cache).unwrap();
}
