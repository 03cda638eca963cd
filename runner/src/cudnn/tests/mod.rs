//! The cuDNN call sequence, checked against a stub library compiled here (`stub_cudnn.c`):
//! it answers every call and logs each with its arguments, and the tests read that log.

mod calls;
mod layout;

use super::{Api, CudnnError, DevPtr, DeviceMemory};
use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A stub `libcudnn.so.9`, compiled into `dir` (at `sub`, made as needed).
pub fn build_stub(dir: &Path, sub: &str) -> PathBuf {
    let folder = dir.join(sub);
    std::fs::create_dir_all(&folder).unwrap();
    let src = dir.join("stub_cudnn.c");
    std::fs::write(&src, include_str!("stub_cudnn.c")).unwrap();
    let lib = folder.join("libcudnn.so.9");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .expect("a C compiler (cc) to build the stub cuDNN");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    lib
}

/// A loaded stub: the library (kept alive for the table) and its table.
pub struct Stub {
    _dir: tempfile::TempDir,
    lib: libloading::Library,
    pub api: Api,
}

impl Stub {
    pub fn new() -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let path = build_stub(dir.path(), "lib");
        // SAFETY: the stub has no initialisers.
        let lib = unsafe { libloading::Library::new(&path) }.unwrap();
        // SAFETY: the stub defines every function with the table's signature.
        let api = unsafe { Api::from_library(&lib) }.unwrap();
        Stub { _dir: dir, lib, api }
    }

    /// Every call logged so far, one per line.
    pub fn log(&self) -> Vec<String> {
        // SAFETY: the stub returns its NUL-terminated buffer.
        let text = unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn() -> *const c_char>(b"stub_log\0")
                .unwrap();
            CStr::from_ptr(f()).to_string_lossy().into_owned()
        };
        text.lines().map(str::to_owned).collect()
    }

    /// Makes the stub's function `name` fail from now on (with CUDNN_STATUS_BAD_PARAM).
    pub fn fail(&self, name: &'static CStr) {
        // SAFETY: the stub keeps the pointer, which is static.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(*const c_char)>(b"stub_fail\0")
                .unwrap();
            f(name.as_ptr());
        }
    }
}

/// Device memory as addresses handed out and recorded, never touched.
#[derive(Default)]
pub struct Recorded {
    pub next: usize,
    pub allocs: Vec<(usize, usize)>,
    pub freed: Vec<usize>,
    pub uploads: Vec<(usize, Vec<i32>)>,
}

impl DeviceMemory for &mut Recorded {
    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, CudnnError> {
        self.next += 0x10_0000;
        self.allocs.push((self.next, bytes));
        Ok(self.next as DevPtr)
    }

    fn upload_i32(&mut self, dst: DevPtr, values: &[i32]) -> Result<(), CudnnError> {
        self.uploads.push((dst as usize, values.to_vec()));
        Ok(())
    }

    fn free(&mut self, ptr: DevPtr) {
        self.freed.push(ptr as usize);
    }
}

#[test]
fn the_loader_finds_cudnn_in_a_venv_and_calls_it() {
    let dir = tempfile::tempdir().unwrap();
    let site = "venv/lib/python3.11/site-packages";
    let lib = build_stub(dir.path(), &format!("{site}/nvidia/cudnn/lib"));
    std::fs::create_dir_all(dir.path().join(format!("{site}/nvidia/cu13/lib"))).unwrap();
    let venv = dir.path().join("venv");
    // Found from the venv's root (VIRTUAL_ENV), and from cuBLAS's wheel folder on the library
    // path, once.
    let by_root = crate::cuda_dl::venv_cudnn(std::slice::from_ref(&venv), None);
    assert_eq!(by_root, std::slice::from_ref(&lib));
    let ld = std::env::join_paths([dir.path().join(format!("{site}/nvidia/cu13/lib")), dir.path().into()]).unwrap();
    assert_eq!(crate::cuda_dl::venv_cudnn(&[], Some(&ld)), std::slice::from_ref(&lib));
    assert_eq!(
        crate::cuda_dl::venv_cudnn(std::slice::from_ref(&venv), Some(&ld)),
        std::slice::from_ref(&lib)
    );
    assert!(crate::cuda_dl::venv_cudnn(&[dir.path().into()], None).is_empty());

    let path = lib.display().to_string();
    let loaded = crate::cuda_dl::open_first(
        crate::cuda_dl::Library::Cudnn,
        &["libmeasured-absent-cudnn.so.9", &path],
    )
    .unwrap();
    // SAFETY: the stub defines the whole table.
    let api = unsafe { Api::from_library(&loaded) }.unwrap();
    assert_eq!(super::api::version_text(api.version()), "9.10.2");
    assert!(api
        .check("cudnnRNNForward", 3)
        .unwrap_err()
        .0
        .contains("CUDNN_STATUS_BAD_PARAM"));
}

#[test]
fn missing_cudnn_says_what_was_looked_for_and_how_to_get_it() {
    let names = [
        "libmeasured-absent-cudnn.so.9",
        "/nowhere/nvidia/cudnn/lib/libcudnn.so.9",
    ];
    let err = crate::cuda_dl::open_first(crate::cuda_dl::Library::Cudnn, &names)
        .map(|_| ())
        .unwrap_err();
    let text = err.with_hint();
    assert!(
        text.starts_with(
            "cuDNN 9 not found: looked for libmeasured-absent-cudnn.so.9, /nowhere/nvidia/cudnn/lib/libcudnn.so.9 ("
        ),
        "{text}"
    );
    assert!(
        text.contains("pip install nvidia-cudnn-cu13") && text.contains("rnn_engine = \"dfdx\""),
        "{text}"
    );
}

/// The loader against a real cuDNN: `MEASURED_CUDNN_VENV` names a folder laid out as a venv
/// with the `nvidia-cudnn-cu13` (or `-cu12`) wheel unpacked into its site-packages. Run with
/// `--ignored`; needs no GPU (`cudnnGetVersion` and the symbol table only).
#[test]
#[ignore = "needs a real cuDNN wheel: set MEASURED_CUDNN_VENV"]
fn a_real_cudnn_loads_from_its_venv() {
    let venv = std::env::var_os("MEASURED_CUDNN_VENV").expect("MEASURED_CUDNN_VENV");
    let found = crate::cuda_dl::venv_cudnn(&[venv.into()], None);
    assert_eq!(found.len(), 1, "{found:?}");
    let path = found[0].display().to_string();
    let lib = crate::cuda_dl::open_first(crate::cuda_dl::Library::Cudnn, &[&path]).unwrap();
    // SAFETY: a cuDNN 9 library.
    let api = unsafe { Api::from_library(&lib) }.unwrap();
    let version = api.version();
    println!("cuDNN {} ({version}) from {path}", super::api::version_text(version));
    assert!((90000..100000).contains(&version), "{version}");
}
