//! Restoring the terminal when brute dies in a way no destructor sees: an abort (a stack
//! overflow ends in one) or SIGQUIT. The handler only calls async-signal-safe functions: it
//! writes a fixed byte string that leaves the alternate screen and turns off the modes brute
//! turned on, puts back the terminal settings saved at start, and re-raises the signal.
//! (SIGTERM and SIGHUP are handled in the event loop, which exits cleanly; SIGKILL cannot be
//! caught by anyone.)

use std::sync::atomic::{AtomicBool, Ordering};

/// Mouse off, focus reporting off, bracketed paste off, keyboard enhancement popped, alternate screen left, cursor
/// shown, synchronized update ended.
const RESTORE: &[u8] =
    b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b[<1u\x1b[?2026l\x1b[?1049l\x1b[?25h";

static SAVED: AtomicBool = AtomicBool::new(false);
static mut TERMIOS: std::mem::MaybeUninit<libc::termios> = std::mem::MaybeUninit::uninit();

const SIGNALS: [libc::c_int; 2] = [libc::SIGABRT, libc::SIGQUIT];

extern "C" fn restore_and_reraise(signal: libc::c_int) {
    // SAFETY: write, tcsetattr, signal and raise are async-signal-safe; TERMIOS is written once
    // before SAVED is set and never again.
    unsafe {
        libc::write(libc::STDOUT_FILENO, RESTORE.as_ptr().cast(), RESTORE.len());
        if SAVED.load(Ordering::Acquire) {
            let termios = &raw const TERMIOS;
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, (*termios).as_ptr());
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Saves the terminal settings (call before raw mode) and installs the handlers.
pub fn install() {
    // SAFETY: tcgetattr fills the buffer on success; it is written before SAVED is published,
    // and install runs once, before raw mode, from the UI's start.
    unsafe {
        let termios = &raw mut TERMIOS;
        if libc::tcgetattr(libc::STDIN_FILENO, (*termios).as_mut_ptr()) == 0 {
            SAVED.store(true, Ordering::Release);
        }
        for signal in SIGNALS {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = restore_and_reraise as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
