//! API keys: taken out of brute's environment at start, and kept out of what the model sees.
//!
//! Removing a variable with `unsetenv` does not change `/proc/<pid>/environ`: the kernel
//! shows the original environment block. So at start (before any thread) the key variables
//! are copied here, removed from the environment, and their bytes in that block are
//! overwritten. Config reads them through [`var`]. Tool output that contains a key verbatim
//! is redacted ([`redact`]) before it is shown or saved.

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

/// The variables that hold provider keys (read from the provider table).
pub use crate::provider::spec::key_vars;

/// What replaces a key in tool output.
pub const REDACTED: &str = "[REDACTED]";

/// Keys shorter than this are not redacted (they would match ordinary text).
const MIN_REDACTED_LEN: usize = 8;

fn taken() -> &'static RwLock<Vec<(String, String)>> {
    static TAKEN: OnceLock<RwLock<Vec<(String, String)>>> = OnceLock::new();
    TAKEN.get_or_init(RwLock::default)
}

fn extra() -> &'static RwLock<Vec<String>> {
    static EXTRA: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    EXTRA.get_or_init(RwLock::default)
}

unsafe extern "C" {
    static mut environ: *const *mut libc::c_char;
}

/// Moves the key variables out of the process environment and wipes their bytes from the
/// environment block that `/proc/<pid>/environ` shows.
///
/// # Safety
/// Call at the very start of `main`, before any other thread exists and before anything has
/// changed the environment.
pub unsafe fn take_from_environment() {
    let key_vars = key_vars();
    let mut found: Vec<(String, String, *mut libc::c_char, usize)> = Vec::new();
    // SAFETY: the caller guarantees no concurrent access; environ is NULL-terminated.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let raw = *entry;
            let bytes = std::ffi::CStr::from_ptr(raw).to_bytes();
            if let Some(eq) = bytes.iter().position(|b| *b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]).into_owned();
                if key_vars.contains(&name.as_str()) {
                    let value = String::from_utf8_lossy(&bytes[eq + 1..]).into_owned();
                    found.push((name, value, raw, bytes.len()));
                }
            }
            entry = entry.add(1);
        }
    }
    let mut keys = taken().write().unwrap_or_else(|e| e.into_inner());
    for (name, value, raw, len) in found {
        // SAFETY: single-threaded (caller's contract).
        unsafe { std::env::remove_var(&name) };
        // SAFETY: `raw` points at `len` bytes of the original block, no longer referenced by
        // environ; the block lives for the whole process and is writable.
        unsafe { std::ptr::write_bytes(raw, 0, len) };
        if !value.is_empty() {
            keys.push((name, value));
        }
    }
}

/// A variable's value: a key taken at start, else the environment's.
pub fn var(name: &str) -> Option<String> {
    let keys = taken().read().unwrap_or_else(|e| e.into_inner());
    if let Some((_, value)) = keys.iter().find(|(n, _)| n == name) {
        return Some(value.clone());
    }
    std::env::var(name).ok()
}

/// Adds a secret to redact that did not come from the environment (e.g. `api_key` in a
/// config file).
pub fn register(secret: &str) {
    if secret.len() >= MIN_REDACTED_LEN {
        let mut extra = extra().write().unwrap_or_else(|e| e.into_inner());
        if !extra.iter().any(|s| s == secret) {
            extra.push(secret.to_owned());
        }
    }
}

/// `text` with every known key replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let keys = taken().read().unwrap_or_else(|e| e.into_inner());
    let extra = extra().read().unwrap_or_else(|e| e.into_inner());
    let mut secrets: Vec<&str> = keys
        .iter()
        .map(|(_, v)| v.as_str())
        .chain(extra.iter().map(String::as_str))
        .filter(|s| s.len() >= MIN_REDACTED_LEN)
        .collect();
    let from_env: Vec<String> = key_vars()
        .iter()
        .filter_map(|n| std::env::var(n).ok())
        .filter(|s| s.len() >= MIN_REDACTED_LEN)
        .collect();
    secrets.extend(from_env.iter().map(String::as_str));
    if !secrets.iter().any(|s| text.contains(s)) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for secret in secrets {
        out = out.replace(secret, REDACTED);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_redacted() {
        register("sk-test-0123456789abcdef");
        register("short");
        assert_eq!(
            redact("key=sk-test-0123456789abcdef; short stays"),
            "key=[REDACTED]; short stays"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }
}
