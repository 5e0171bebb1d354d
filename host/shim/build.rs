//! The shim is found as `libcuda.so.1`, the SONAME programs linked with `-lcuda` record.
//! Its source directory goes to the command's build script, which may build and embed it.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        println!("cargo::metadata=source={}", dir.to_string_lossy());
    }
}
