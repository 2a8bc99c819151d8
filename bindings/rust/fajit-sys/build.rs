// Finds libfajit: FAJIT_DIR (an install prefix, whose lib/ holds it, or the directory that
// holds it, such as a build tree's src/), else pkg-config's fajit.pc. The declarations are
// checked in (src/bindings.rs); tests/bindings.rs regenerates them and compares.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FAJIT_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let directory = match env::var_os("FAJIT_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            let lib = dir.join("lib");
            if lib.join("libfajit.so").exists() {
                lib
            } else {
                dir
            }
        }
        None => pkg_config_directory().unwrap_or_else(|why| {
            panic!("fajit-sys: libfajit not found: set FAJIT_DIR to its install prefix or directory ({why})")
        }),
    };
    if !directory.join("libfajit.so").exists() {
        panic!("fajit-sys: no libfajit.so in {}", directory.display());
    }
    println!("cargo:rustc-link-search=native={}", directory.display());
    println!("cargo:rustc-link-lib=dylib=fajit");
    // Dependent crates' build scripts and tests can find it here (DEP_FAJIT_LIB_DIR).
    println!("cargo:lib_dir={}", directory.display());
}

fn pkg_config_directory() -> Result<PathBuf, String> {
    let output = Command::new("pkg-config")
        .args(["--variable=libdir", "fajit"])
        .output()
        .map_err(|error| format!("running pkg-config: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "pkg-config: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}
