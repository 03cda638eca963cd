//! The `measured` binary: all behaviour lives in the library; this only maps to an exit code.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(measured::commands::main())
}
