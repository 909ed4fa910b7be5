//! Pruning is mark and sweep under the store lock: a seeded session's checkpoint survives a
//! prune that deletes the session it was seeded from, a damaged or unreadable session keeps
//! everything it refers to, and a prune never runs while a session is seeding.

use std::path::Path;
use std::time::{Duration, SystemTime};

use brute::session::lock::StoreLock;
use brute::session::objects::{ObjectStore, hash};
use brute::session::prune::{DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, PruneError, prune};
use brute::session::{Recorder, SessionStore};

struct Project {
    root: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let p = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        for name in ["a", "b", "c"] {
            let path = p.root.path().join(format!("{name}.txt"));
            std::fs::write(&path, format!("{name} original\n")).unwrap();
            // Old enough that a scan reuses the recorded hash without reading the file.
            age(&path, 1);
        }
        p
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.data.path(), self.root.path())
    }

    fn objects(&self) -> ObjectStore {
        ObjectStore::new(self.data.path().join("objects"))
    }

    fn recorder(&self) -> Recorder {
        let store = self.store();
        let file = store.create().unwrap();
        Recorder::new(store, file, &Default::default(), 1 << 20)
    }

    /// One finished turn that changes a.txt.
    fn turn(&self, recorder: &mut Recorder, content: &str) {
        recorder.begin_turn("change a", 0).unwrap();
        std::fs::write(self.root.path().join("a.txt"), content).unwrap();
        recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    }

    fn prune(&self, max_age: Duration) -> brute::session::prune::Pruned {
        prune(self.data.path(), max_age, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .expect("the store lock was free")
    }
}

fn age(path: &Path, days: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(days * 24 * 3600))
        .unwrap();
}

#[test]
fn a_seeded_checkpoint_survives_the_prune_of_the_session_it_came_from() {
    let p = Project::new();
    let mut first = p.recorder();
    p.turn(&mut first, "a first\n");
    let first_path = first.file.path().to_path_buf();
    drop(first);
    // The first session is a month old: the daily prune deletes it.
    age(&first_path, 40);
    // The seam: a new session seeds from it (registered under the store lock) before the
    // prune runs; the prune must keep what the seed reaches.
    let mut second = p.recorder();
    assert!(second.has_history(), "the new session seeded from the old one");
    let pruned = p.prune(DEFAULT_MAX_AGE);
    assert_eq!(pruned.sessions, 1, "the old session went");
    assert!(!first_path.exists());
    for name in ["b", "c"] {
        assert!(
            p.objects().contains(&hash(format!("{name} original\n").as_bytes())),
            "{name}.txt's content, reused by the seed, is kept"
        );
    }
    // The seeded session checkpoints without re-reading b and c, and undo restores a.
    second.begin_turn("again", 0).unwrap();
    std::fs::write(p.root.path().join("b.txt"), "b changed\n").unwrap();
    second.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    let mut history = Vec::new();
    second.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(
        std::fs::read_to_string(p.root.path().join("b.txt")).unwrap(),
        "b original\n"
    );
    // Once the seed is gone, the second session's own file keeps its checkpoint.
    drop(second);
    assert!(std::fs::read_dir(p.data.path().join("seeds")).unwrap().next().is_none());
    p.prune(DEFAULT_MAX_AGE);
    assert!(p.objects().contains(&hash(b"b original\n")));
    assert!(p.objects().contains(&hash(b"c original\n")));
}

#[test]
fn no_prune_runs_while_the_store_lock_is_held() {
    let p = Project::new();
    let mut recorder = p.recorder();
    p.turn(&mut recorder, "x\n");
    let stray = p.objects().put(b"nobody refers to this").unwrap();
    let held = StoreLock::shared(p.data.path()).unwrap();
    assert!(
        prune(p.data.path(), Duration::ZERO, DEFAULT_MAX_BYTES, Duration::ZERO)
            .unwrap()
            .is_none(),
        "a seeding session holds the lock: the prune waits for another day"
    );
    assert!(p.objects().contains(&stray));
    drop(held);
    assert_eq!(p.prune(DEFAULT_MAX_AGE).objects, 1);
    assert!(!p.objects().contains(&stray));
}

#[test]
fn a_damaged_session_keeps_what_it_refers_to() {
    let p = Project::new();
    let mut recorder = p.recorder();
    p.turn(&mut recorder, "a changed\n");
    let path = recorder.file.path().to_path_buf();
    drop(recorder);
    // An invalid byte in the middle of the checkpoint line itself.
    let mut bytes = std::fs::read(&path).unwrap();
    let line = String::from_utf8_lossy(&bytes).find("\"type\":\"checkpoint\"").unwrap();
    bytes[line + 3] = 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let before = p.objects().list().len();
    p.prune(DEFAULT_MAX_AGE);
    assert_eq!(p.objects().list().len(), before, "nothing it names was swept");
    assert!(p.objects().contains(&hash(b"a original\n")));
}

#[test]
fn an_unreadable_session_stops_the_prune() {
    let p = Project::new();
    let mut recorder = p.recorder();
    p.turn(&mut recorder, "a changed\n");
    let dir = recorder.file.path().parent().unwrap().to_path_buf();
    drop(recorder);
    let stray = p.objects().put(b"nobody refers to this").unwrap();
    // A session entry that cannot be read as a file.
    std::fs::create_dir(dir.join("9999999999999-beef.jsonl")).unwrap();
    let err = prune(p.data.path(), DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, Duration::ZERO).unwrap_err();
    assert!(
        matches!(&err, PruneError::Unreadable { path, .. } if path.ends_with("9999999999999-beef.jsonl")),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was pruned"));
    assert!(p.objects().contains(&stray), "nothing was swept");
    assert!(p.objects().contains(&hash(b"a original\n")));
}

/// Images kept for prompts (`pasted/`) go once older than sessions may be: the prompt that
/// attached one carried its bytes into its session. A link there is never followed, and a
/// newer image stays.
#[test]
fn kept_images_older_than_a_session_may_be_are_pruned() {
    let p = Project::new();
    let pasted = brute::paths::pasted_dir(p.data.path());
    std::fs::create_dir_all(&pasted).unwrap();
    let (old, new) = (pasted.join("clipboard-1.png"), pasted.join("clipboard-2.png"));
    std::fs::write(&old, b"old").unwrap();
    std::fs::write(&new, b"new").unwrap();
    age(&old, 40);
    age(&new, 2);
    // A link to an old file outside: neither the link's target nor the link is its to take.
    let outside = p.root.path().join("outside.png");
    std::fs::write(&outside, b"outside").unwrap();
    age(&outside, 40);
    std::os::unix::fs::symlink(&outside, pasted.join("link.png")).unwrap();
    let pruned = p.prune(DEFAULT_MAX_AGE);
    assert_eq!(pruned.pasted, 1);
    assert!(!old.exists());
    assert_eq!(std::fs::read(&new).unwrap(), b"new");
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside");
    assert!(pasted.join("link.png").symlink_metadata().is_ok());
}
