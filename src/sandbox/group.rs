//! Process groups: every process brute starts leads a group of its own, and ending it means
//! signalling the whole group, so a command's children never outlive it.

use std::time::Duration;

/// How long an interrupted or timed-out command has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// Sends `signal` to every process in the group led by `pid`.
pub fn signal_group(pid: u32, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid)
        && pid > 0
    {
        // SAFETY: killpg has no memory-safety preconditions; a stale group id only fails.
        unsafe {
            libc::killpg(pid, signal);
        }
    }
}

/// Sends SIGKILL to every process in the group led by `pid`.
pub fn kill_group(pid: u32) {
    signal_group(pid, libc::SIGKILL);
}
