//! Checkpoints of a project tree: a manifest of every file and directory (respecting
//! .gitignore, never entering `.git`), file contents in the [`ObjectStore`]. Scans are
//! incremental: a file whose size, mtime, ctime and mode did not change keeps its recorded
//! hash without being read. Works in any directory, git repository or not, and never touches git.
//!
//! One job per file: [`manifest`] (what a checkpoint records), [`map`] (how a manifest is
//! held), [`scanner`] (scanning a tree),
//! [`walk`] (deciding each walked entry), [`deep`] (reaching past PATH_MAX), [`store`]
//! (storing and loading manifests), [`encoding`] (their binary form), [`cursor`] (walking stored manifests in order),
//! [`consent`] (whether a tree may be copied without asking), [`held`], [`target`] and
//! [`restore`] (moving a tree between states).
//!
//! [`ObjectStore`]: crate::session::objects::ObjectStore

mod consent;
mod cursor;
mod deep;
mod encoding;
mod held;
mod manifest;
mod map;
mod restore;
mod scanner;
mod store;
mod target;
mod walk;

pub use consent::{UNASKED_BYTES, UNASKED_ENTRIES, copy_warning, paused_notice};
pub use cursor::Cursor;
pub use held::Held;
pub use manifest::{Change, ContentId, FileState, Manifest, Note, diff};
pub use restore::{MissingContent, MoveReport, Moved, Unrestorable, apply, preview};
pub use scanner::{
    Budget, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_WALK, SMALL_TREE, Scan, Scanner, Walked, WatchFrom,
};
pub use store::{
    Base, Chain, load_manifest, load_shared, manifest_chain, manifest_chain_until, newer_form, save_manifest,
    save_manifest_after,
};
