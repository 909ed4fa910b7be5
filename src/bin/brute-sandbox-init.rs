//! The sandbox init on its own (see `brute::sandbox::init`): brute starts it before every
//! command when it is installed beside brute. It is brute's init code and nothing else, so it
//! starts in a fraction of the time brute's own binary takes.

use std::process::ExitCode;

fn main() -> ExitCode {
    match brute::sandbox::dispatch_init() {
        Some(code) => ExitCode::from(code),
        None => {
            brute::sanitize::eprint_line(
                "brute-sandbox-init: brute starts this program before each command; it does nothing on its own",
            );
            ExitCode::from(2)
        }
    }
}
