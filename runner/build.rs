//! Records the compiler version, stored with every run's environment fingerprint, embeds the
//! SQL migrations, and with the `cuda` feature generates the run-time loader of the CUDA
//! libraries (see `cuda_shim`).
fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MEASURED_RUSTC_VERSION={}", version.trim());
    println!("cargo:rerun-if-changed=build.rs");
    embed_migrations();
    #[cfg(feature = "cuda")]
    cuda_shim::generate();
    #[cfg(feature = "cuda")]
    mlp_kernels();
}

/// With the `cuda` feature, compiles the MLP step's kernels (`src/tensor/tc/mlp.cu`) to PTX in
/// `$OUT_DIR/mlp.ptx`, which the binary embeds: nothing is compiled at run time, and no CUDA
/// header is needed there. The `nvcc` is the one `scripts/build-cuda.sh` puts on `PATH` (or
/// `$NVCC`). The PTX targets compute capability 7.5, the oldest CUDA 13 builds for, so it loads
/// on every GPU the driver does; tensor cores are cuBLAS's business, not these kernels'.
#[cfg(feature = "cuda")]
fn mlp_kernels() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dir = root.join("src/tensor/tc");
    for f in ["mlp.cu", "mlp_math.h"] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=NVCC");
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("mlp.ptx");
    let status = std::process::Command::new(&nvcc)
        .args(["--ptx", "-arch=compute_75", "-O3", "-o"])
        .arg(&out)
        .arg(dir.join("mlp.cu"))
        .status()
        .unwrap_or_else(|e| {
            panic!("running {nvcc} for the MLP kernels: {e}; build with scripts/build-cuda.sh, which provides nvcc")
        });
    assert!(status.success(), "{nvcc} failed on src/tensor/tc/mlp.cu ({status})");
}

/// Embeds the SQL migrations (`migrations/sqlite`, `migrations/postgres`) in the binary:
/// writes `$OUT_DIR/migrations.rs`, one `(file name, contents)` list per backend in file-name
/// order, which `db.rs` hands to sqlx's migrator. sqlx's `migrate!` macro does the same, but
/// its `macros` feature builds a second copy of sqlx, tokio and SQLite for the compiler.
fn embed_migrations() {
    let root = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("../migrations");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::new();
    for (name, dir) in [("SQLITE", "sqlite"), ("POSTGRES", "postgres")] {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a readable migrations folder").path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "sql"))
            .collect();
        files.sort();
        out.push_str(&format!("pub(crate) const {name}: &[(&str, &str)] = &[\n"));
        for f in files {
            let file = f.file_name().and_then(|n| n.to_str()).expect("a UTF-8 migration name");
            let path = f.canonicalize().expect("an existing migration");
            out.push_str(&format!(
                "    ({file:?}, include_str!({:?})),\n",
                path.display().to_string()
            ));
        }
        out.push_str("];\n");
    }
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("migrations.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("writing {}: {e}", dest.display()));
}

/// With the `cuda` feature, cudarc is built with `ci-check`, so it links no CUDA library and its
/// `extern "C"` declarations stay unresolved. This writes a definition for every function those
/// declarations name (driver, cuBLAS, NVRTC): each looks its target up in the library loaded at
/// run time by `crate::cuda_dl` and calls it, or returns the library's own error status when the
/// library or symbol is missing. The binary then starts on any machine, driver or not.
///
/// The declarations are read from cudarc's own `sys.rs` files, so the signatures are the ones
/// the callers were compiled against; a function this misses is a link error, not a crash.
#[cfg(feature = "cuda")]
mod cuda_shim {
    use quote::{format_ident, quote};
    use std::path::{Path, PathBuf};

    /// (cudarc module, status type, status returned when the library or symbol is missing).
    const LIBS: [(&str, &str, &str); 3] = [
        ("driver", "CUresult", "CUDA_ERROR_NOT_FOUND"),
        ("cublas", "cublasStatus_t", "CUBLAS_STATUS_NOT_INITIALIZED"),
        ("nvrtc", "nvrtcResult", "NVRTC_ERROR_INTERNAL_ERROR"),
    ];

    pub fn generate() {
        let src = cudarc_source();
        let mut out =
            String::from("// Generated by build.rs from cudarc's bindings: one forwarding definition per function.\n");
        for (module, status, missing) in LIBS {
            let path = src.join("src").join(module).join("sys.rs");
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
            out.push_str(&module_source(module, status, missing, &file));
        }
        let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("cuda_shim.rs");
        std::fs::write(&dest, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
    }

    fn module_source(module: &str, status: &str, missing: &str, file: &syn::File) -> String {
        let mut variant = module.to_string();
        variant[..1].make_ascii_uppercase();
        let lib = format_ident!("{}", variant);
        let module_ident = format_ident!("{}", module);
        let status_ty = format_ident!("{}", status);
        let missing = format_ident!("{}", missing);
        let mut fns = Vec::new();
        for item in &file.items {
            let syn::Item::ForeignMod(block) = item else { continue };
            for foreign in &block.items {
                let syn::ForeignItem::Fn(f) = foreign else { continue };
                let sig = &f.sig;
                assert!(sig.variadic.is_none(), "variadic {} is not supported", sig.ident);
                let name = &sig.ident;
                let symbol = syn::LitByteStr::new(format!("{name}\0").as_bytes(), proc_macro2::Span::call_site());
                let args: Vec<_> = (0..sig.inputs.len()).map(|i| format_ident!("a{i}")).collect();
                let types: Vec<_> = sig
                    .inputs
                    .iter()
                    .map(|arg| match arg {
                        syn::FnArg::Typed(t) => &t.ty,
                        syn::FnArg::Receiver(_) => panic!("receiver in extern fn {name}"),
                    })
                    .collect();
                let output = &sig.output;
                let counted = match (module, waits_for_device(&name.to_string())) {
                    ("driver", Some(kind)) => {
                        let kind = format_ident!("{}", kind);
                        quote!(super::count_call(super::CallKind::#kind);)
                    }
                    _ => quote!(),
                };
                let returns_status = matches!(output,
                    syn::ReturnType::Type(_, ty) if quote!(#ty).to_string() == status);
                let fallback = if returns_status {
                    quote!(#status_ty::#missing)
                } else {
                    quote!(super::missing_symbol(#symbol))
                };
                fns.push(quote! {
                    #[no_mangle]
                    pub unsafe extern "C" fn #name(#(#args: #types),*) #output {
                        #counted
                        static ADDR: super::Slot = super::Slot::new();
                        match ADDR.get(super::Library::#lib, #symbol) {
                            // SAFETY: the symbol has this signature in the library cudarc's
                            // bindings were generated from; the caller upholds its contract.
                            Some(addr) => unsafe {
                                let f: unsafe extern "C" fn(#(#types),*) #output =
                                    std::mem::transmute(addr);
                                f(#(#args),*)
                            },
                            None => #fallback,
                        }
                    }
                });
            }
        }
        assert!(!fns.is_empty(), "no functions found in cudarc's {module} bindings");
        // The forwarders' one `unsafe` block is documented once, in the template above: quote!
        // drops comments, so the generated copies carry no `// SAFETY:` line for clippy to see.
        quote! {
            #[allow(
                non_snake_case,
                clippy::missing_safety_doc,
                clippy::too_many_arguments,
                clippy::undocumented_unsafe_blocks
            )]
            pub mod #module_ident {
                #[allow(unused_imports)]
                use cudarc::#module_ident::sys::*;
                #(#fns)*
            }
        }
        .to_string()
    }

    /// Which driver calls make the host wait for the device, by the `cuda_dl::CallKind` that
    /// counts them: the synchronizations (`Wait`), the copies without `Async` (`Copy`: they
    /// return once the copy is done), and the queries (`Query`: a poll, never a wait, counted
    /// apart). Versioned names (`cuMemcpyDtoH_v2`, `cuStreamSynchronize_ptsz`) count as their
    /// base name.
    fn waits_for_device(name: &str) -> Option<&'static str> {
        let is = |base: &str| name == base || name.strip_prefix(base).is_some_and(|rest| rest.starts_with('_'));
        if ["cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"]
            .iter()
            .any(|b| is(b))
        {
            Some("Wait")
        } else if name.starts_with("cuMemcpy") && !name.contains("Async") {
            Some("Copy")
        } else if ["cuStreamQuery", "cuEventQuery"].iter().any(|b| is(b)) {
            Some("Query")
        } else {
            None
        }
    }

    /// cudarc's source: `MEASURED_CUDARC_SRC` (set by `scripts/build-cuda.sh`), else the version
    /// `Cargo.lock` pins, in cargo's registry.
    fn cudarc_source() -> PathBuf {
        println!("cargo:rerun-if-env-changed=MEASURED_CUDARC_SRC");
        if let Some(dir) = std::env::var_os("MEASURED_CUDARC_SRC") {
            return PathBuf::from(dir);
        }
        let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
        let lock = manifest.join("../Cargo.lock");
        println!("cargo:rerun-if-changed={}", lock.display());
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        let version = text
            .split("[[package]]")
            .find(|p| p.contains("name = \"cudarc\""))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"').to_string())
            .expect("cudarc is not in Cargo.lock; set MEASURED_CUDARC_SRC to its source folder");
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
            .expect("neither CARGO_HOME nor HOME is set");
        let registries =
            std::fs::read_dir(home.join("registry/src")).expect("no cargo registry sources; set MEASURED_CUDARC_SRC");
        registries
            .filter_map(Result::ok)
            .map(|r| r.path().join(format!("cudarc-{version}")))
            .find(|p| p.join("src/driver/sys.rs").is_file())
            .unwrap_or_else(|| panic!("cudarc-{version} source not found; set MEASURED_CUDARC_SRC to its folder"))
    }
}
