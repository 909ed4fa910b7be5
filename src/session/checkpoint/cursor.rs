//! The [`Cursor`]: stored manifests walked one after another, applying each one's changes in
//! place (listing a long session's turns costs O(changes)).

use super::manifest::{Manifest, diff};
use super::store::{load_manifest, parse_delta};
use crate::session::objects::ObjectStore;

/// Walks stored manifests one after another, keeping one materialized: moving to a manifest
/// stored as the changes from the one held applies those changes in place and counts the
/// paths they change (as [`diff`] would), without loading or cloning whole manifests. Listing
/// the turns of a long session (`brute undo --list`) is then O(changes), not O(turns × tree).
#[derive(Default)]
pub struct Cursor {
    id: Option<String>,
    manifest: Manifest,
}

impl Cursor {
    /// Moves to manifest `id`; returns how many paths differ in content from the one held
    /// before (from nothing, the first time).
    pub fn move_to(&mut self, objects: &ObjectStore, id: &str) -> std::io::Result<usize> {
        if self.id.as_deref() == Some(id) {
            return Ok(0);
        }
        let bytes = objects.get(id)?;
        let delta = parse_delta(&bytes).transpose()?;
        match delta {
            Some(delta) if self.id.as_deref() == Some(delta.base.as_str()) => {
                let mut changed = 0;
                for path in &delta.del {
                    changed += usize::from(self.manifest.remove(path).is_some());
                }
                for (path, state) in delta.set {
                    let same = self.manifest.get(&path).is_some_and(|old| old.same_content(&state));
                    changed += usize::from(!same);
                    self.manifest.insert(path, state);
                }
                self.id = Some(id.to_owned());
                Ok(changed)
            }
            _ => {
                let next = load_manifest(objects, id)?;
                let changed = diff(&self.manifest, &next).len();
                self.manifest = next;
                self.id = Some(id.to_owned());
                Ok(changed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::checkpoint::{Base, FileState, save_manifest_after};

    fn state(objects: &ObjectStore, content: &str, mtime_ns: u64) -> FileState {
        FileState {
            id: objects.put(content.as_bytes()).unwrap().into(),
            size: content.len() as u64,
            mode: 0o100644,
            mtime_ns,
            ctime_ns: 0,
            dir: false,
            link: false,
            git: Default::default(),
        }
    }

    /// The cursor's counts equal `diff` between consecutive manifests, whether they are stored
    /// as changes (applied in place) or whole (compared), and metadata-only changes count not.
    #[test]
    fn the_cursor_counts_what_diff_counts() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().join("objects"));
        let mut manifest = Manifest::new();
        for i in 0..40 {
            manifest.insert(format!("f{i}"), state(&objects, &format!("v0 {i}"), 0));
        }
        let mut stored: Vec<(String, Manifest)> = Vec::new();
        let (mut id, mut chain) = save_manifest_after(&objects, &manifest, None).unwrap();
        stored.push((id.clone(), manifest.clone()));
        for step in 1..80u64 {
            let previous = manifest.clone();
            let i = step as usize % 40;
            match step % 4 {
                0 => {
                    manifest.remove(&format!("f{i}"));
                }
                1 => {
                    manifest.insert(format!("f{i}"), state(&objects, &format!("v{step} {i}"), step));
                }
                2 => {
                    // Only the timestamp moves: no change in content.
                    let touched = manifest.get(&format!("f{i}")).cloned();
                    if let Some(mut touched) = touched {
                        touched.mtime_ns = step;
                        manifest.insert(format!("f{i}"), touched);
                    }
                }
                _ => {
                    manifest.insert(format!("new{step}"), state(&objects, "new", step));
                }
            }
            let base = Base {
                id: &id,
                manifest: &previous,
                chain,
            };
            (id, chain) = save_manifest_after(&objects, &manifest, Some(base)).unwrap();
            stored.push((id.clone(), manifest.clone()));
        }
        assert!(chain.depth > 0, "some manifests are stored as changes");
        let mut cursor = Cursor::default();
        assert_eq!(cursor.move_to(&objects, &stored[0].0).unwrap(), 40);
        for pair in stored.windows(2) {
            let expected = diff(&pair[0].1, &pair[1].1).len();
            assert_eq!(cursor.move_to(&objects, &pair[1].0).unwrap(), expected);
        }
        // Jumping back (not stored as changes from the held one) compares whole manifests.
        assert_eq!(
            cursor.move_to(&objects, &stored[3].0).unwrap(),
            diff(&stored[79].1, &stored[3].1).len()
        );
    }
}
