//! The UI's use of [`crate::sanitize`] (shared with `brute -p`, which needs it without the
//! terminal crates).

pub use crate::sanitize::sanitize;
