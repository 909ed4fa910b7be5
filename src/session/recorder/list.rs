//! The checkpoints of a session's turns, with the number of paths each changed.

use crate::session::{SessionStore, Turn, checkpoint};

/// The checkpoints of `turns`, newest last, with the number of paths each turn changed (an
/// unfinished turn counts up to the next turn's start). Reads only: works on a read-only
/// data directory.
pub fn checkpoints(store: &SessionStore, turns: &[Turn]) -> Vec<(Turn, usize)> {
    // Turns are walked in order with one manifest held (see `checkpoint::Cursor`): each
    // manifest is usually stored as the changes from the one before.
    let mut cursor = checkpoint::Cursor::default();
    turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let end = t.end.as_ref().or_else(|| {
                turns
                    .get(i + 1)
                    .filter(|next| !t.tools_only && !next.tools_only)
                    .map(|next| &next.start)
            });
            let changed = match end {
                Some(end) => cursor
                    .move_to(store.objects(), &t.start)
                    .and_then(|_| cursor.move_to(store.objects(), end))
                    .unwrap_or_else(|_| {
                        // Unreadable: start again from whatever reads next.
                        cursor = checkpoint::Cursor::default();
                        0
                    }),
                None => 0,
            };
            (t.clone(), changed)
        })
        .collect()
}
