//! A content-addressed object store: each blob is stored once under its SHA-256, so unchanged
//! files cost nothing however many checkpoints refer to them.
//!
//! Single objects are stored loose (`objects/ab/cdef…`). A checkpoint's many new blobs go
//! into one pack (`objects/pack/<name>.pack`, made visible by its `.idx` written last), since
//! creating thousands of small files is what makes a first checkpoint slow. Past
//! [`MAX_PACKS`] packs or [`MAX_LOOSE`] loose objects, the smallest packs and the loose
//! objects are merged into one ([`ObjectStore::consolidate`]), so a store that has seen
//! thousands of turns still has a handful of packs of geometrically growing sizes, and a
//! lookup is one hash-map probe (a miss reads only the indexes it has not read yet).
//!
//! A full disk (ENOSPC) or an I/O error (EIO) at any write costs that write only: a file is
//! made visible (renamed into place, or its pack's index written) only once it is complete
//! and synced, a pack that cannot be finished is removed at once, and a pack left without
//! its index by a killed writer is discarded when a session next opens the store
//! ([`ObjectStore::discard_partial`]; the writer's `flock` tells a live writer from a dead
//! one). An index line that is cut, or that points past the end of its pack, is ignored: the
//! object counts as absent and the next checkpoint stores it again.
//!
//! [`store`] is the store itself (loose objects, indexes, merges, pruning), [`pack`] writes
//! one pack, [`fault`] lets tests fail writes.

mod fault;
mod id;
mod pack;
mod store;
#[cfg(test)]
mod tests;

pub use id::{ContentId, GIT_PREFIX};
pub use pack::PackWriter;
pub use store::{MAX_LOOSE, MAX_PACKS, ObjectStore, hash};
