//! The CUDA libraries, loaded at run time (tensor, transfer, measure::env -> cuda_dl).
//!
//! A `cuda` build links no CUDA library: cudarc is built with its `ci-check` feature, which
//! drops its link directives, and `build.rs` generates a definition for every driver, cuBLAS
//! and NVRTC function cudarc declares (module `shim`). Each definition looks its symbol up, on
//! first call, in the library this module loads with `dlopen`, and returns that library's own
//! error status when the library or symbol is missing. So one binary starts everywhere: on a
//! machine without the NVIDIA driver, every CPU stage runs, and a CUDA stage fails with
//! [`Unavailable`], which names what was looked for and how to get it.
//!
//! [`probe`] is the gate: it loads all three libraries, initialises the driver and counts the
//! devices, once per process. Code that opens a device calls it first, which also keeps
//! cudarc 0.9's `CudaDevice::new` (it unwraps `cuInit`) from ever panicking here.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;

/// A library the `cuda` build calls into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The driver API, installed with the NVIDIA driver.
    Driver,
    /// cuBLAS (dfdx's matrix products), from the CUDA toolkit or a PyTorch CUDA wheel.
    Cublas,
    /// NVRTC (kernels dfdx compiles at run time), same sources as cuBLAS.
    Nvrtc,
    /// cuDNN 9 (the recurrent models' cuDNN path), from a cuDNN install or a PyTorch CUDA
    /// wheel's `nvidia/cudnn/lib`. Loaded only by that path: [`probe`] does not need it.
    Cudnn,
}

impl Library {
    /// The libraries every CUDA stage needs ([`probe`] loads them).
    const ALL: [Library; 3] = [Library::Driver, Library::Cublas, Library::Nvrtc];

    /// File names tried in order: the SONAMEs of CUDA 13, then 12, then the unversioned link.
    pub fn candidates(self) -> &'static [&'static str] {
        match self {
            Library::Driver => &["libcuda.so.1", "libcuda.so"],
            Library::Cublas => &["libcublas.so.13", "libcublas.so.12", "libcublas.so"],
            Library::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"],
            Library::Cudnn => &["libcudnn.so.9"],
        }
    }

    /// Where to look, in order: the [`Library::candidates`] (the loader's own search:
    /// LD_LIBRARY_PATH, the system's library folders), then for cuDNN the Python environments
    /// [`venv_cudnn`] finds from this process's environment.
    fn search(self) -> Vec<String> {
        let mut names: Vec<String> = self.candidates().iter().map(|n| (*n).to_owned()).collect();
        if self == Library::Cudnn {
            let roots: Vec<std::path::PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
                .iter()
                .filter_map(std::env::var_os)
                .map(Into::into)
                .collect();
            let ld_path = std::env::var_os("LD_LIBRARY_PATH");
            names.extend(
                venv_cudnn(&roots, ld_path.as_deref())
                    .into_iter()
                    .map(|p| p.display().to_string()),
            );
        }
        names
    }

    fn what(self) -> &'static str {
        match self {
            Library::Driver => "the CUDA driver library",
            Library::Cublas => "cuBLAS",
            Library::Nvrtc => "NVRTC",
            Library::Cudnn => "cuDNN 9",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Library::Driver => {
                "install the NVIDIA driver (it provides libcuda.so.1), or use `device = \"cpu\"` \
                 (or \"auto\", which falls back to the CPU)"
            }
            Library::Cublas | Library::Nvrtc => {
                "put a CUDA 13 (or 12) toolkit's lib folder on LD_LIBRARY_PATH, e.g. a PyTorch \
                 CUDA venv's: export LD_LIBRARY_PATH=\"$(python3 -c 'import nvidia, os; \
                 print(os.path.join(nvidia.__path__[0], \"cu13\", \"lib\"))')\" (see \
                 bench/README-gpu.md)"
            }
            Library::Cudnn => {
                "install cuDNN 9 for CUDA 13 or 12 (`pip install nvidia-cudnn-cu13` into the \
                 Python environment that VIRTUAL_ENV or CONDA_PREFIX names, which is searched, or \
                 put a folder holding libcudnn.so.9 on LD_LIBRARY_PATH), or train with \
                 `rnn_engine = \"dfdx\"`"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Why CUDA cannot be used in this process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The binary was built without the `cuda` feature.
    #[error("this binary was built without CUDA")]
    NotBuilt,
    /// None of a library's file names could be loaded.
    #[error("{what} not found: looked for {looked_for} ({detail})")]
    Missing {
        library: Library,
        what: &'static str,
        looked_for: String,
        detail: String,
    },
    /// `cuInit` failed for another reason than "no device".
    #[error("the CUDA driver failed to initialise: {0}")]
    Init(String),
    /// The driver works and sees no device.
    #[error("no CUDA device is visible{0}")]
    NoDevice(String),
}

impl Unavailable {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Unavailable::NotBuilt => {
                "build with `scripts/build-cuda.sh` (one binary for CPU and GPU machines), or use \
                 `device = \"cpu\"`"
            }
            Unavailable::Missing { library, .. } => library.hint(),
            Unavailable::Init(_) => {
                "check the driver with `nvidia-smi`; a driver older than the CUDA 13 toolkit \
                 cannot load this build's kernels"
            }
            Unavailable::NoDevice(_) => "check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or use `device = \"cpu\"`",
        }
    }

    /// The message and its hint, for a stage error.
    pub fn with_hint(&self) -> String {
        format!("{self}; {}", self.hint())
    }
}

/// What [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// The driver's CUDA version, e.g. 13000 for 13.0.
    pub driver_version: i32,
    /// Devices the driver sees (after CUDA_VISIBLE_DEVICES).
    pub devices: i32,
}

impl Runtime {
    /// E.g. "CUDA 13.0, 1 device".
    pub fn describe(&self) -> String {
        let plural = if self.devices == 1 { "" } else { "s" };
        format!(
            "CUDA {}.{}, {} device{plural}",
            self.driver_version / 1000,
            self.driver_version % 1000 / 10,
            self.devices
        )
    }
}

static LOADED: [OnceLock<Result<libloading::Library, Unavailable>>; 4] =
    [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];

/// `library`, loaded on first use and kept for the life of the process.
pub fn load(library: Library) -> Result<&'static libloading::Library, &'static Unavailable> {
    LOADED[library.index()]
        .get_or_init(|| {
            let names = library.search();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            open_first(library, &names)
        })
        .as_ref()
}

/// cuDNN 9 inside Python environments, in order: for each of `roots` (a venv's or conda
/// environment's folder), `lib/python3.*/site-packages/nvidia/cudnn/lib/libcudnn.so.9`; then,
/// for each folder on `ld_library_path` that is a PyTorch CUDA wheel's `nvidia/<name>/lib`
/// (where the documented setup points for cuBLAS), the `nvidia/cudnn/lib` beside it. Only files
/// that exist are listed.
pub fn venv_cudnn(roots: &[std::path::PathBuf], ld_library_path: Option<&std::ffi::OsStr>) -> Vec<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    const FILE: &str = "nvidia/cudnn/lib/libcudnn.so.9";
    let mut found: Vec<PathBuf> = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root.join("lib")) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path().join("site-packages").join(FILE))
            .collect();
        pythons.sort();
        found.extend(pythons);
    }
    for dir in ld_library_path.map(std::env::split_paths).into_iter().flatten() {
        // `.../site-packages/nvidia/cu13/lib` -> `.../site-packages/nvidia/cudnn/lib`.
        let nvidia = dir.parent().and_then(Path::parent);
        if let Some(nvidia) = nvidia.filter(|n| n.file_name().is_some_and(|f| f == "nvidia")) {
            found.push(nvidia.parent().unwrap_or(nvidia).join(FILE));
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|p| p.is_file() && seen.insert(p.clone()));
    found
}

/// The first of `names` that loads (a test seam: [`load`] passes the library's search list).
pub fn open_first(library: Library, names: &[&str]) -> Result<libloading::Library, Unavailable> {
    let mut first_error = String::new();
    for name in names {
        // SAFETY: these are the CUDA libraries (or, in tests, stand-ins compiled for them),
        // whose initialisers have no preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return Ok(lib),
            Err(e) if first_error.is_empty() => first_error = e.to_string(),
            Err(_) => {}
        }
    }
    Err(Unavailable::Missing {
        library,
        what: library.what(),
        looked_for: names.join(", "),
        detail: first_error,
    })
}

/// Whether CUDA can be used here, checked once per process: all three libraries load, the
/// driver initialises and sees at least one device.
pub fn probe() -> Result<&'static Runtime, &'static Unavailable> {
    static PROBED: OnceLock<Result<Runtime, Unavailable>> = OnceLock::new();
    PROBED.get_or_init(probe_now).as_ref()
}

fn probe_now() -> Result<Runtime, Unavailable> {
    if !cfg!(feature = "cuda") {
        return Err(Unavailable::NotBuilt);
    }
    for library in Library::ALL {
        load(library).map_err(Clone::clone)?;
    }
    driver_state()
}

#[cfg(feature = "cuda")]
fn driver_state() -> Result<Runtime, Unavailable> {
    use cudarc::driver::sys::{cuDeviceGetCount, cuDriverGetVersion, cuInit, CUresult};
    let no_device = || {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES")
            .map(|v| format!(" (CUDA_VISIBLE_DEVICES={v:?})"))
            .unwrap_or_default();
        Unavailable::NoDevice(visible)
    };
    // SAFETY: plain driver calls with valid out-pointers; the driver library is loaded.
    unsafe {
        match cuInit(0) {
            CUresult::CUDA_SUCCESS => {}
            CUresult::CUDA_ERROR_NO_DEVICE => return Err(no_device()),
            other => return Err(Unavailable::Init(format!("cuInit returned {other:?}"))),
        }
        let mut version = 0;
        let mut devices = 0;
        let status = cuDriverGetVersion(&mut version);
        if status != CUresult::CUDA_SUCCESS {
            return Err(Unavailable::Init(format!("cuDriverGetVersion returned {status:?}")));
        }
        let status = cuDeviceGetCount(&mut devices);
        if status != CUresult::CUDA_SUCCESS {
            return Err(Unavailable::Init(format!("cuDeviceGetCount returned {status:?}")));
        }
        if devices < 1 {
            return Err(no_device());
        }
        Ok(Runtime {
            driver_version: version,
            devices,
        })
    }
}

#[cfg(not(feature = "cuda"))]
fn driver_state() -> Result<Runtime, Unavailable> {
    Err(Unavailable::NotBuilt)
}

/// The model name of CUDA device `ordinal` as the driver reports it (`NVIDIA H200`); `None`
/// where CUDA cannot be used (see [`probe`]) or the driver does not say.
pub fn device_name(ordinal: i32) -> Option<String> {
    probe().ok()?;
    device_name_now(ordinal)
}

#[cfg(feature = "cuda")]
fn device_name_now(ordinal: i32) -> Option<String> {
    use cudarc::driver::sys::{cuDeviceGet, cuDeviceGetName, CUresult};
    let mut device = 0;
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: valid out-pointers; the buffer's length is passed, and the driver writes a
    // NUL-terminated name within it. `probe` succeeded, so the driver is initialised.
    unsafe {
        if cuDeviceGet(&mut device, ordinal) != CUresult::CUDA_SUCCESS
            || cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device) != CUresult::CUDA_SUCCESS
        {
            return None;
        }
    }
    let bytes: Vec<u8> = name.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(not(feature = "cuda"))]
fn device_name_now(_: i32) -> Option<String> {
    None
}

/// The address of one function, resolved on first call and cached (one per generated
/// definition).
pub struct Slot(AtomicPtr<c_void>);

impl Slot {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Slot(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// `symbol` (NUL-terminated) in `library`, or `None` when either is missing.
    pub fn get(&self, library: Library, symbol: &[u8]) -> Option<*mut c_void> {
        let cached = self.0.load(Ordering::Acquire);
        if !cached.is_null() {
            return Some(cached);
        }
        let lib = load(library).ok()?;
        // SAFETY: the address is only ever called through the signature cudarc declares for
        // this name, by the generated definition that owns this slot.
        let addr = unsafe { lib.get::<unsafe extern "C" fn()>(symbol) }.ok()?;
        let addr = *addr as *mut c_void;
        self.0.store(addr, Ordering::Release);
        Some(addr)
    }
}

/// A driver call that makes the host wait for the device (see `build.rs`, which decides which
/// calls count as which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// `cuCtxSynchronize`, `cuStreamSynchronize`, `cuEventSynchronize`.
    Wait,
    /// A `cuMemcpy*` without `Async`: it returns once the copy is done.
    Copy,
    /// `cuStreamQuery`, `cuEventQuery`: a poll that never waits, counted apart.
    Query,
}

/// Calls counted so far in this process, by [`CallKind`].
static CALLS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Counts one call of `kind`; the generated forwarders call it before forwarding.
pub fn count_call(kind: CallKind) {
    CALLS[kind as usize].fetch_add(1, Ordering::Relaxed);
}

/// How many driver calls of each kind passed through the forwarders: counted in this process
/// ([`CallCounts::now`]) or between two readings ([`CallCounts::since`]). Always zero in a CPU
/// build, and in a CUDA build until a CUDA stage runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    pub waits: u64,
    pub copies: u64,
    pub queries: u64,
}

impl CallCounts {
    pub fn now() -> CallCounts {
        let at = |k: CallKind| CALLS[k as usize].load(Ordering::Relaxed);
        CallCounts {
            waits: at(CallKind::Wait),
            copies: at(CallKind::Copy),
            queries: at(CallKind::Query),
        }
    }

    /// The calls counted between `earlier` and this reading.
    pub fn since(self, earlier: CallCounts) -> CallCounts {
        CallCounts {
            waits: self.waits.saturating_sub(earlier.waits),
            copies: self.copies.saturating_sub(earlier.copies),
            queries: self.queries.saturating_sub(earlier.queries),
        }
    }

    pub fn plus(self, other: CallCounts) -> CallCounts {
        CallCounts {
            waits: self.waits + other.waits,
            copies: self.copies + other.copies,
            queries: self.queries + other.queries,
        }
    }

    /// The calls that made the host wait: synchronizations and blocking copies.
    pub fn synchronizing(self) -> u64 {
        self.waits + self.copies
    }
}

/// For a missing function that returns no status to fail with: after a successful [`probe`]
/// only a library lacking an old, stable function gets here.
#[cold]
pub fn missing_symbol(symbol: &[u8]) -> ! {
    let name = String::from_utf8_lossy(symbol.strip_suffix(b"\0").unwrap_or(symbol));
    eprintln!("measured: the loaded CUDA library has no function `{name}`; aborting");
    std::process::abort()
}

#[cfg(feature = "cuda")]
#[allow(unsafe_op_in_unsafe_fn, clippy::all)]
mod shim {
    use super::{count_call, missing_symbol, CallKind, Library, Slot};
    include!(concat!(env!("OUT_DIR"), "/cuda_shim.rs"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_names_every_file_tried_and_the_loader_error() {
        let names = ["libmeasured-absent-a.so.1", "libmeasured-absent-b.so"];
        let err = open_first(Library::Cublas, &names).map(|_| ()).unwrap_err();
        let text = err.with_hint();
        assert!(
            text.starts_with("cuBLAS not found: looked for libmeasured-absent-a.so.1, libmeasured-absent-b.so ("),
            "{text}"
        );
        // The loader's own reason is kept, for the first name tried.
        assert!(
            text.contains("libmeasured-absent-a.so.1: cannot open shared object file"),
            "{text}"
        );
        assert!(text.contains("LD_LIBRARY_PATH"), "{text}");
    }

    #[test]
    fn the_driver_hint_says_how_to_install_it_and_how_to_do_without() {
        let err = open_first(Library::Driver, &["libmeasured-absent-cuda.so.1"])
            .map(|_| ())
            .unwrap_err();
        assert!(err.hint().contains("install the NVIDIA driver"), "{}", err.hint());
        assert!(err.hint().contains("device = \"cpu\""), "{}", err.hint());
    }

    #[test]
    fn a_library_that_exists_loads_and_resolves_symbols_into_its_slot() {
        // libc stands in for a CUDA library: loading and lookup are the same calls.
        let lib = open_first(Library::Driver, &["libmeasured-absent.so", "libc.so.6"]).expect("libc");
        // SAFETY: `getpid` takes nothing and returns an int.
        let getpid = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"getpid\0") }.expect("getpid");
        // SAFETY: as above.
        assert_eq!(unsafe { getpid() } as u32, std::process::id());
    }

    #[test]
    fn counted_calls_add_up_by_kind() {
        let before = CallCounts::now();
        count_call(CallKind::Wait);
        count_call(CallKind::Copy);
        count_call(CallKind::Query);
        let d = CallCounts::now().since(before);
        // Other tests may count too, in parallel: at least these three.
        assert!(d.waits >= 1 && d.copies >= 1 && d.queries >= 1, "{d:?}");
        assert_eq!(d.synchronizing(), d.waits + d.copies);
        assert_eq!(d.plus(d).queries, 2 * d.queries);
    }

    #[test]
    fn the_runtime_reads_like_nvidia_smi() {
        let one = Runtime {
            driver_version: 13000,
            devices: 1,
        };
        assert_eq!(one.describe(), "CUDA 13.0, 1 device");
        let two = Runtime {
            driver_version: 12080,
            devices: 2,
        };
        assert_eq!(two.describe(), "CUDA 12.8, 2 devices");
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn a_cpu_build_says_it_was_built_without_cuda_and_how_to_get_it() {
        let err = probe().unwrap_err();
        assert_eq!(*err, Unavailable::NotBuilt);
        assert!(err.hint().contains("scripts/build-cuda.sh"));
    }
}
