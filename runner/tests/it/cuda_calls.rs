//! The generated forwarding layer of a `cuda` build counts the driver calls that make the host
//! wait for the device: a stub `libcuda.so.1`, compiled here, answers every call, and the
//! counts by kind are what the calls made through the forwarders add up to. This is how a
//! CUDA training's `sync_calls` are measured, checked on a machine without a GPU.

use std::ffi::c_void;
use std::process::Command;

/// The stub driver: every function the test calls returns CUDA_SUCCESS (0).
const STUB: &str = r#"
int cuCtxSynchronize(void) { return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuEventSynchronize(void *e) { return 0; }
int cuStreamQuery(void *s) { return 0; }
int cuEventQuery(void *e) { return 0; }
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, unsigned long n) { return 0; }
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, unsigned long n, void *s) { return 0; }
"#;

// The forwarders `build.rs` generates for the driver, linked in from measured's library: the
// same symbols cudarc's bindings call. Their status is a C enum, an `int` here.
extern "C" {
    fn cuCtxSynchronize() -> u32;
    fn cuStreamSynchronize(s: *mut c_void) -> u32;
    fn cuEventSynchronize(e: *mut c_void) -> u32;
    fn cuStreamQuery(s: *mut c_void) -> u32;
    fn cuEventQuery(e: *mut c_void) -> u32;
    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, n: usize) -> u32;
    fn cuMemcpyHtoDAsync_v2(dst: u64, src: *const c_void, n: usize, s: *mut c_void) -> u32;
}

const CHILD: &str = "MEASURED_CUDA_CALLS_CHILD";

#[test]
fn forwarded_driver_calls_are_counted_by_kind() {
    if std::env::var_os(CHILD).is_none() {
        // The loader looks for libcuda.so.1 on the library path, which the dynamic linker reads
        // when a process starts: build the stub and run this test again in a child that has it.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stub.c"), STUB).unwrap();
        let cc = Command::new("cc")
            .args(["-shared", "-fPIC", "-o", "libcuda.so.1", "stub.c"])
            .current_dir(dir.path())
            .output()
            .expect("a C compiler (cc) to build the stub driver");
        assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cuda_calls::forwarded_driver_calls_are_counted_by_kind",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("LD_LIBRARY_PATH", dir.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "the child ran the test: {text}");
        return;
    }
    let before = measured::cuda_dl::CallCounts::now();
    let null = std::ptr::null_mut();
    let mut byte = 0u8;
    // SAFETY: the stub's functions take these arguments and touch none of them.
    let statuses = unsafe {
        [
            cuCtxSynchronize(),
            cuStreamSynchronize(null),
            cuEventSynchronize(null),
            cuStreamQuery(null),
            cuEventQuery(null),
            cuMemcpyDtoH_v2((&mut byte as *mut u8).cast(), 0, 1),
            cuMemcpyHtoDAsync_v2(0, (&byte as *const u8).cast(), 1, null),
        ]
    };
    assert_eq!(statuses, [0; 7], "every call reached the stub");
    let d = measured::cuda_dl::CallCounts::now().since(before);
    // Three synchronizations, one blocking copy (the asynchronous one is not counted), two
    // queries apart.
    assert_eq!((d.waits, d.copies, d.queries), (3, 1, 2), "{d:?}");
    assert_eq!(d.synchronizing(), 4);
}
