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
    /// Images kept for prompts (see [`crate::paths::pasted_dir`]).
    pub pasted: usize,
}

/// Every session file, oldest first. A directory that cannot be listed is an error: its
/// sessions would otherwise count as having no checkpoints.
fn sessions(data_dir: &Path) -> Result<Vec<(SystemTime, PathBuf)>, PruneError> {
    let mut out = Vec::new();
    let root = data_dir.join("sessions");
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PruneError::Unreadable { path, source }
    };
    let projects = match std::fs::read_dir(&root) {
        Ok(projects) => projects,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(unreadable(&root)(e)),
    };
    for project in projects {
        let project = project.map_err(unreadable(&root))?;
        let files = std::fs::read_dir(project.path()).map_err(unreadable(&project.path()))?;
        for file in files {
            let file = file.map_err(unreadable(&project.path()))?;
            // Session files only: `turns/` (see `activity`) keeps its own.
            if !file.file_name().to_string_lossy().ends_with(".jsonl") {
                continue;
            }
            let modified = file
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            out.push((modified, file.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Why a prune did not run.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// A session file could not be read: what it refers to is unknown, so nothing is swept.
    #[error("cannot read session {path}: {source}; nothing was pruned")]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// A manifest in a form this brute does not know (written by a newer one): what it
    /// names is unknown, so nothing is swept.
    #[error("manifest {id} was written by a newer brute; nothing was pruned")]
    NewerManifest { id: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Every 64-hex-digit token in `bytes`: object ids, found even in damaged lines.
fn hex_ids(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|b| !b.is_ascii_hexdigit())
        .filter(|t| t.len() == 64)
        .map(|t| String::from_utf8_lossy(t).to_ascii_lowercase())
}

/// What the mark phase has found: every object to keep, the ids whose chain of manifests is
/// marked, and the ids whose contents are (a manifest marked as another's base has its
/// chain marked, not its contents: a session naming it later still needs those).
#[derive(Default)]
struct Marks {
    refs: HashSet<String>,
    chained: HashSet<String>,
    listed: HashSet<String>,
}

/// Marks what `manifest` reaches: itself, the manifests its changes are stored against, and
/// the contents it lists. A session's turns share one chain: the walk down it stops at the
/// first manifest already marked, so marking a session is O(turns), not O(turns × depth).
fn mark_manifest(objects: &ObjectStore, manifest: &str, marks: &mut Marks) -> Result<(), PruneError> {
    if !marks.chained.contains(manifest) {
        let chain = super::checkpoint::manifest_chain_until(objects, manifest, |id| marks.chained.contains(id));
        marks.refs.extend(chain.iter().cloned());
        marks.chained.extend(chain);
    }
    if !marks.listed.insert(manifest.to_owned()) {
        return Ok(());
    }
    match load_manifest(objects, manifest) {
        Ok(loaded) => marks
            .refs
            .extend(loaded.values().filter(|s| !s.id.is_empty()).map(|s| s.id.to_string())),
        Err(_)
            if objects
                .get(manifest)
                .is_ok_and(|bytes| super::checkpoint::newer_form(&bytes)) =>
        {
            return Err(PruneError::NewerManifest {
                id: manifest.to_owned(),
            });
        }
        // Not a manifest (a content the session names), or a damaged one.
        Err(_) => {}
    }
    Ok(())
}

/// The mark phase: every object reachable from a session file on disk — parsed or not (any
/// id-like token counts, so a damaged line still protects what it names) — and from every
/// seed a running process registered. An unreadable session file stops the prune.
fn referenced(
    data_dir: &Path,
    objects: &ObjectStore,
    files: &[(SystemTime, PathBuf)],
) -> Result<HashSet<String>, PruneError> {
    let mut marks = Marks::default();
    for (_, path) in files {
        let bytes = std::fs::read(path).map_err(|source| PruneError::Unreadable {
            path: path.clone(),
            source,
        })?;
        for id in hex_ids(&bytes) {
            mark_manifest(objects, &id, &mut marks)?;
        }
    }
    let seeds = super::lock::seeds_dir(data_dir);
    if let Ok(entries) = std::fs::read_dir(&seeds) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().and_then(|p| p.parse().ok());
            if pid.is_some_and(|pid| !super::lock::alive(pid)) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            for id in hex_ids(&bytes) {
                mark_manifest(objects, &id, &mut marks)?;
            }
        }
    }
    Ok(marks.refs)
}

/// Prunes the store under `data_dir`: mark and sweep under the store lock. `None` when
/// another process holds the lock (a prune or a seeding session): it is tried another day.
pub fn prune(
    data_dir: &Path,
    max_age: Duration,
    max_bytes: u64,
    grace: Duration,
) -> Result<Option<Pruned>, PruneError> {
    let Some(_lock) = super::lock::StoreLock::exclusive_now(data_dir)? else {
        return Ok(None);
    };
    let objects = ObjectStore::new(data_dir.join("objects"));
    let now = SystemTime::now();
    let mut pruned = Pruned::default();
    let mut files = sessions(data_dir)?;
    pruned.pasted = prune_pasted(data_dir, max_age, now);
    files.retain(|(modified, path)| {
        let old = now.duration_since(*modified).is_ok_and(|age| age > max_age);
        if old && path.is_file() && std::fs::remove_file(path).is_ok() {
            pruned.sessions += 1;
            return false;
        }
        true
    });
    loop {
        let refs = referenced(data_dir, &objects, &files)?;
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
    Ok(Some(pruned))
}

/// Removes the images kept for prompts (`pasted/`) that are older than `max_age`: the prompt
/// that attached one carried its bytes into the session that sent it. Only regular files go
/// (a link there is never followed).
fn prune_pasted(data_dir: &Path, max_age: Duration, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(crate::paths::pasted_dir(data_dir)) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let old = entry
                .metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .and_then(|meta| meta.modified().ok())
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > max_age);
            old && std::fs::remove_file(entry.path()).is_ok()
        })
        .count()
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
        match prune(&data_dir, DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, GRACE) {
            Ok(Some(_)) => {}
            Ok(None) => tracing::info!("pruning skipped: the store is busy"),
            Err(e) => tracing::warn!(error = %e, "pruning old sessions failed"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Recorder, SessionStore};

    /// A manifest in a form this brute cannot read but marked as one (a newer brute wrote it
    /// into a shared data dir) stops the prune: what it names is kept.
    #[test]
    fn a_manifest_of_a_newer_brute_stops_the_prune() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let store = SessionStore::new(data.path(), project.path());
        let objects = ObjectStore::new(data.path().join("objects"));
        let content = objects.put(b"named only by the newer manifest").unwrap();
        let newer = objects.put(format!("brute-manifest-9\n{content}").as_bytes()).unwrap();
        let mut file = store.create().unwrap();
        file.append(&crate::session::Record::Checkpoint {
            turn: 1,
            manifest: newer.clone(),
            history_len: 0,
            prompt: "from a newer brute".into(),
            at_ms: crate::session::now_ms(),
        })
        .unwrap();
        let error = prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO).unwrap_err();
        assert!(
            matches!(&error, PruneError::NewerManifest { id } if *id == newer),
            "{error}"
        );
        assert!(objects.contains(&content) && objects.contains(&newer));
    }

    #[test]
    fn old_sessions_and_unreferenced_objects_go() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("a.txt"), "one").unwrap();
        let store = SessionStore::new(data.path(), project.path());
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        std::fs::write(project.path().join("a.txt"), "two").unwrap();
        recorder.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        let objects = ObjectStore::new(data.path().join("objects"));
        let stray = objects.put(b"referenced by nothing").unwrap();
        let young = prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, GRACE)
            .unwrap()
            .unwrap();
        assert_eq!(
            young.objects, 0,
            "a just-written object may belong to a running checkpoint"
        );
        let kept = prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(kept.objects, 1, "only the stray object goes");
        assert!(!objects.contains(&stray));
        assert_eq!(store.ids().len(), 1);
        // Everything is older than a zero max age.
        let gone = prune(data.path(), Duration::ZERO, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(gone.sessions, 1);
        assert!(objects.list().is_empty());
        // And a tiny size budget drops the oldest sessions first.
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        recorder.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        recorder.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        let trimmed = prune(data.path(), DEFAULT_MAX_AGE, 1, Duration::ZERO).unwrap().unwrap();
        assert_eq!(trimmed.sessions, 1);
    }

    /// A session whose checkpoints another session's are stored against keeps its own
    /// contents, whichever session file the mark phase reads first: a newer session seeded
    /// from an older one, and the older one resumed since (so read last).
    #[test]
    fn a_base_marked_through_another_session_keeps_its_contents() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(project.path().join(format!("f{i}.txt")), format!("file {i}")).unwrap();
        }
        let store = SessionStore::new(data.path(), project.path());
        let first = store.create().unwrap();
        let first_path = store.file_path(&first.id);
        let mut a = Recorder::new(store.clone(), first, &Default::default(), 1 << 20);
        a.begin_turn("a", 0).unwrap();
        std::fs::write(project.path().join("f0.txt"), "changed by a").unwrap();
        a.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        let before_a = a.turns[0].start.clone();
        drop(a);
        let mut b = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        b.begin_turn("b", 0).unwrap();
        std::fs::write(project.path().join("f0.txt"), "changed by b").unwrap();
        b.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        drop(b);
        // The first session was resumed later: its file is the newest, read last.
        let later = std::time::SystemTime::now() + Duration::from_secs(60);
        std::fs::File::options()
            .append(true)
            .open(&first_path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .unwrap();
        let objects = ObjectStore::new(data.path().join("objects"));
        let before = load_manifest(&objects, &before_a).unwrap();
        assert_eq!(
            objects.get(&before["f0.txt"].id.to_string()).unwrap(),
            b"file 0",
            "a's undo needs it"
        );
    }

    /// A session that names only a manifest stored as changes keeps the manifests those
    /// changes are stored against: without them it could not be loaded, nor any undo done.
    #[test]
    fn a_manifest_stored_as_changes_keeps_its_base() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(project.path().join(format!("f{i}.txt")), format!("file {i}")).unwrap();
        }
        let store = SessionStore::new(data.path(), project.path());
        let file = store.create().unwrap();
        let id = file.id.clone();
        let mut recorder = Recorder::new(store.clone(), file, &Default::default(), 1 << 20);
        recorder.begin_turn("t", 0).unwrap();
        std::fs::write(project.path().join("f0.txt"), "changed").unwrap();
        recorder.end_turn(&crate::session::TurnWork::all_by_commands()).unwrap();
        let (base, delta) = (recorder.turns[0].start.clone(), recorder.turns[0].end.clone().unwrap());
        drop(recorder);
        let objects = ObjectStore::new(data.path().join("objects"));
        assert!(objects.get(&delta).unwrap().starts_with(b"brute-manifest-delta"));
        // Only the changes are named on disk now.
        let session = store.file_path(&id);
        std::fs::write(
            &session,
            format!("{{\"type\":\"turn_end\",\"manifest\":\"{delta}\"}}\n"),
        )
        .unwrap();
        prune(data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .unwrap();
        assert!(objects.contains(&delta) && objects.contains(&base), "the base survives");
        assert_eq!(
            super::super::checkpoint::manifest_chain(&objects, &delta),
            [delta.clone(), base]
        );
    }
}
