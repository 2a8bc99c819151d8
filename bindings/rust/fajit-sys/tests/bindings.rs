//! The checked-in declarations match the header, and the library agrees on the struct.
use std::process::Command;

#[test]
fn bindings_match_the_header() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../regenerate-bindings.sh");
    match Command::new("bindgen").arg("--version").output() {
        Ok(_) => {}
        Err(error) => {
            println!("skipped: no bindgen to regenerate the declarations with ({error})");
            return;
        }
    }
    let output = Command::new(script)
        .arg("--check")
        .output()
        .expect("running regenerate-bindings.sh");
    assert!(
        output.status.success(),
        "src/bindings.rs is out of date with fajit.h: run bindings/rust/regenerate-bindings.sh\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn the_library_refuses_a_struct_of_another_size() {
    use fajit_sys::*;
    use std::ffi::CStr;
    let mut runtime: *mut fajit_runtime = std::ptr::null_mut();
    let settings = [fajit_setting {
        name: c"FAJIT_CACHE_DISABLE".as_ptr(),
        value: c"1".as_ptr(),
    }];
    unsafe {
        assert_eq!(fajit_runtime_create(settings.as_ptr(), 1, &mut runtime), FAJIT_SUCCESS);
        let mut args: fajit_attention_args = std::mem::zeroed();
        // What a caller compiled against an older header, 8 bytes shorter, would pass.
        args.struct_size = (std::mem::size_of::<fajit_attention_args>() - 8) as u32;
        let status = fajit_attention(runtime, &args, std::ptr::null_mut());
        let message = CStr::from_ptr(fajit_last_error()).to_string_lossy().into_owned();
        fajit_runtime_destroy(runtime);
        assert_eq!(status, FAJIT_ERROR_INVALID_ARGUMENT);
        assert!(message.contains("struct_size="), "{message}");
    }
}
