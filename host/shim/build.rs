//! The shim is found as `libcuda.so.1`, the SONAME programs linked with `-lcuda` record.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
