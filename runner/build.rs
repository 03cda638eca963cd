//! Records the compiler version, stored with every run's environment fingerprint.
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
    // sqlx::migrate! embeds these files; rebuild when they change.
    println!("cargo:rerun-if-changed=../migrations");
}
