//! Pruning: sessions older than a maximum age are deleted, then stored objects no remaining
//! session refers to; while the store is still over its size budget, the oldest sessions go.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::checkpoint::load_manifest;
use super::objects::ObjectStore;

/// Defaults: 30 days, 2 GiB.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Objects younger than this are never pruned: a running brute may have written them for a
/// checkpoint it has not recorded yet.
pub const GRACE: Duration = Duration::from_secs(3600);
/// How often [`maybe_prune`] actually prunes.
const INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    pub sessions: usize,
    pub objects: usize,
    pub bytes: u64,
}

fn sessions(data_dir: &Path) -> Vec<(SystemTime, PathBuf)> {
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(data_dir.join("sessions")) else {
        return out;
    };
    for project in projects.flatten() {
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let modified = file
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            out.push((modified, file.path()));
        }
    }
    out.sort();
    out
}

fn referenced(objects: &ObjectStore, files: &[(SystemTime, PathBuf)]) -> HashSet<String> {
    let mut refs = HashSet::new();
    for (_, path) in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for turn in super::replay(&text).turns {
            for id in std::iter::once(turn.start).chain(turn.end) {
                if let Ok(manifest) = load_manifest(objects, &id) {
                    refs.extend(manifest.into_values().map(|s| s.id).filter(|id| !id.is_empty()));
                }
                refs.insert(id);
            }
        }
    }
    refs
}

/// Prunes the store under `data_dir`.
pub fn prune(data_dir: &Path, max_age: Duration, max_bytes: u64, grace: Duration) -> std::io::Result<Pruned> {
    let objects = ObjectStore::new(data_dir.join("objects"));
    let now = SystemTime::now();
    let mut pruned = Pruned::default();
    let mut files = sessions(data_dir);
    files.retain(|(modified, path)| {
        let old = now.duration_since(*modified).is_ok_and(|age| age > max_age);
        if old && std::fs::remove_file(path).is_ok() {
            pruned.sessions += 1;
        }
        !old
    });
    loop {
        let refs = referenced(&objects, &files);
        let (removed, freed) = objects.retain(|id| refs.contains(id), grace)?;
        pruned.objects += removed;
        pruned.bytes += freed;
        let total: u64 = objects.list().iter().map(|(_, size)| size).sum();
        // The newest session is never dropped for size: it may be the one running.
        if total <= max_bytes || files.len() <= 1 {
            break;
        }
        let (_, oldest) = files.remove(0);
        if std::fs::remove_file(&oldest).is_ok() {
            pruned.sessions += 1;
        }
    }
    Ok(pruned)
}

/// Prunes at most once a day, in the background, with the default limits.
pub fn maybe_prune(data_dir: &Path) {
    let marker = data_dir.join(".last-prune");
    let due = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_none_or(|age| age > INTERVAL);
    if !due {
        return;
    }
    let data_dir = data_dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = std::fs::create_dir_all(&data_dir);
        let _ = std::fs::write(data_dir.join(".last-prune"), b"");
        if let Err(e) = prune(&data_dir, DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, GRACE) {
            tracing::warn!(error = %e, "pruning old sessions failed");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Recorder, SessionStore};

    #[test]
    fn old_sessions_and_unreferenced_objects_go() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("a.txt"), "one").unwrap();
        let store = SessionStore::new(data.path(), project.path());
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        std::fs::write(project.path().join("a.txt"), "two").unwrap();
        recorder.end_turn().unwrap();
        let objects = ObjectStore::new(data.path().join("objects"));
        let stray = objects.put(b"referenced by nothing").unwrap();
        let young = prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, GRACE).unwrap();
        assert_eq!(
            young.objects, 0,
            "a just-written object may belong to a running checkpoint"
        );
        let kept = prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO).unwrap();
        assert_eq!(kept.objects, 1, "only the stray object goes");
        assert!(!objects.contains(&stray));
        assert_eq!(store.ids().len(), 1);
        // Everything is older than a zero max age.
        let gone = prune(data.path(), Duration::ZERO, DEFAULT_MAX_BYTES, Duration::ZERO).unwrap();
        assert_eq!(gone.sessions, 1);
        assert!(objects.list().is_empty());
        // And a tiny size budget drops the oldest sessions first.
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        recorder.end_turn().unwrap();
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        recorder.end_turn().unwrap();
        let trimmed = prune(data.path(), DEFAULT_MAX_AGE, 1, Duration::ZERO).unwrap();
        assert_eq!(trimmed.sessions, 1);
    }
}
