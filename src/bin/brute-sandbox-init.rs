//! brute's sandbox init as a binary of its own, installed beside `brute`: brute's own init code
//! (see `brute::sandbox::init`) without the rest of brute, so each sandboxed command starts
//! sooner (see `brute::sandbox::exe`).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(brute::sandbox::run_init_binary())
}
