//! Unit tests of the store and its packs: round trips, merges, failed writes, damaged and
//! partial packs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

#[test]
fn loose_and_packed_objects_round_trip_and_prune() {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let loose = store.put(b"loose").unwrap();
    let mut pack = store.pack();
    let a = pack.add_bytes(b"alpha").unwrap();
    let b = pack.add_bytes(b"beta").unwrap();
    assert_eq!(
        pack.add_bytes(b"loose").unwrap(),
        loose,
        "known objects are not packed again"
    );
    assert!(!store.contains(&a), "invisible until finished");
    pack.finish().unwrap();
    assert_eq!(store.get(&a).unwrap(), b"alpha");
    assert_eq!(store.get(&b).unwrap(), b"beta");
    assert_eq!(store.get(&loose).unwrap(), b"loose");
    assert_eq!(store.list().len(), 3);
    let (removed, _) = store
        .retain(|id| id != b && id != loose, Duration::from_secs(3600))
        .unwrap();
    assert_eq!(removed, 0, "nothing young is removed");
    let (removed, _) = store.retain(|id| id != b && id != loose, Duration::ZERO).unwrap();
    assert_eq!(removed, 2);
    assert_eq!(store.get(&a).unwrap(), b"alpha", "the pack was rewritten with the rest");
    assert!(store.get(&b).is_err() && store.get(&loose).is_err());
}

/// Past [`MAX_PACKS`], the small packs are merged and a pack much bigger than all of
/// them together is left alone (merging it each time copied half the store every 16
/// turns); past [`MAX_LOOSE`], loose objects go into a pack too. Every object stays
/// readable, in this process (its index updated in place) and in one that read the
/// indexes before.
#[test]
fn many_packs_are_merged_and_every_object_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let mut big = store.pack();
    let big_ids: Vec<String> = (0..400)
        .map(|k| {
            big.add_bytes(format!("the first checkpoint, file {k}").as_bytes())
                .unwrap()
        })
        .collect();
    big.finish().unwrap();
    let big_pack = store.index_files();
    let mut ids = Vec::new();
    for turn in 0..(MAX_PACKS + 3) {
        let mut pack = store.pack();
        for k in 0..3 {
            ids.push(pack.add_bytes(format!("turn {turn} file {k}").as_bytes()).unwrap());
        }
        pack.finish().unwrap();
    }
    // Another process that read the indexes before the merge.
    let other = ObjectStore::new(dir.path().to_path_buf());
    assert!(other.contains(&ids[0]));
    assert_eq!(store.pack_count(), MAX_PACKS + 4);
    assert!(store.needs_consolidation());
    assert!(store.consolidate().unwrap());
    assert_eq!(store.pack_count(), 2, "the big pack and the merged one");
    assert!(big_pack.iter().all(|idx| idx.exists()), "the big pack was not copied");
    assert!(!store.consolidate().unwrap(), "nothing more to merge");
    // Loose objects: merged once there are MAX_LOOSE of them.
    let loose: Vec<String> = (0..MAX_LOOSE)
        .map(|k| store.put(format!("loose {k}").as_bytes()).unwrap())
        .collect();
    assert!(store.needs_consolidation());
    assert!(store.consolidate().unwrap());
    assert!(store.loose_objects().is_empty(), "no loose file is left");
    for (i, id) in ids.iter().enumerate() {
        let expected = format!("turn {} file {}", i / 3, i % 3);
        assert_eq!(store.get(id).unwrap(), expected.as_bytes());
        assert_eq!(other.get(id).unwrap(), expected.as_bytes(), "a stale index re-reads");
    }
    for (k, id) in loose.iter().enumerate() {
        assert_eq!(store.get(id).unwrap(), format!("loose {k}").as_bytes());
        assert_eq!(other.get(id).unwrap(), format!("loose {k}").as_bytes());
    }
    for (k, id) in big_ids.iter().enumerate() {
        assert_eq!(
            store.get(id).unwrap(),
            format!("the first checkpoint, file {k}").as_bytes()
        );
    }
    assert_eq!(store.list().len(), ids.len() + loose.len() + big_ids.len());
}

/// The files under the store, temporary ones included (what a failed write could leave).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// An I/O error (EIO, through the test seam) at any write of a pack, its index or a loose
/// object leaves nothing behind, and the store works as before once writes succeed.
#[test]
fn a_failed_write_anywhere_leaves_nothing_and_the_store_works_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let kept = store.put(b"there before").unwrap();
    let before = files(dir.path());
    let contents: Vec<Vec<u8>> = (0..40).map(|k| vec![b'a' + (k % 26) as u8; 1000 + k]).collect();
    let total: usize = contents.iter().map(Vec::len).sum();
    // Budgets up to what the pack and its index take: the failure lands in each write.
    let mut failures = 0;
    for budget in (0..total + 4000).step_by(997) {
        store.fail_writes_after(Some(budget));
        let result = (|| {
            let mut pack = store.pack();
            for bytes in &contents {
                pack.add_bytes(bytes)?;
            }
            pack.finish()
        })();
        store.fail_writes_after(None);
        let Err(error) = result else {
            break;
        };
        failures += 1;
        assert_eq!(error.raw_os_error(), None, "said with its path: {error}");
        assert!(error.to_string().contains("Input/output error"), "{error}");
        assert_eq!(files(dir.path()), before, "nothing is left at budget {budget}");
        assert!(!store.contains(&hash(&contents[0])));
    }
    assert!(failures > total / 997, "every write was made to fail once ({failures})");
    let before = files(dir.path());
    store.fail_writes_after(Some(10));
    assert!(store.put(b"a loose object too long for the budget").is_err());
    store.fail_writes_after(None);
    assert_eq!(files(dir.path()), before, "no cut loose object, no temporary file");
    let mut pack = store.pack();
    let ids: Vec<String> = contents.iter().map(|b| pack.add_bytes(b).unwrap()).collect();
    pack.finish().unwrap();
    for (id, bytes) in ids.iter().zip(&contents) {
        assert_eq!(&store.get(id).unwrap(), bytes);
    }
    assert_eq!(store.get(&kept).unwrap(), b"there before");
}

/// An object written a piece at a time gets the id and bytes `put` gives the same bytes, is
/// not written when it is already stored, and a write failing at any point (or a writer whose
/// second pass differs) leaves nothing behind.
#[test]
fn an_object_written_in_pieces_is_the_object_put_whole() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let bytes: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let pieces = |to: &mut dyn Write| bytes.chunks(7919).try_for_each(|piece| to.write_all(piece));
    let before = files(dir.path());
    for budget in (0..bytes.len()).step_by(65_537) {
        store.fail_writes_after(Some(budget));
        let error = store.put_written(pieces).unwrap_err();
        store.fail_writes_after(None);
        assert!(error.to_string().contains("Input/output error"), "{error}");
        assert_eq!(files(dir.path()), before, "nothing is left at budget {budget}");
    }
    let id = store.put_written(pieces).unwrap();
    assert_eq!(id, hash(&bytes));
    assert_eq!(store.get(&id).unwrap(), bytes);
    let stored = files(dir.path());
    // Already there: not written again, so a disk that takes nothing more is no matter.
    store.fail_writes_after(Some(0));
    assert_eq!(store.put_written(pieces).unwrap(), id);
    store.fail_writes_after(None);
    assert_eq!(store.put(&bytes).unwrap(), id);
    assert_eq!(files(dir.path()), stored, "stored once, no temporary file left");
    // A writer that says something else the second time stores nothing under the first's id.
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let error = store
        .put_written(|to| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            to.write_all(format!("call {n}").as_bytes())
        })
        .unwrap_err();
    assert!(error.to_string().contains("differently"), "{error}");
    assert_eq!(files(dir.path()), stored, "nothing stored, no temporary file left");
}

/// A truncated pack, a missing one and a cut index line make those objects absent, not
/// present and unreadable: the next pack stores them again and they read back.
#[test]
fn truncated_packs_and_cut_indexes_are_ignored_and_stored_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let mut pack = store.pack();
    let ids: Vec<String> = ["first", "second", "third"]
        .iter()
        .map(|t| pack.add_bytes(t.as_bytes()).unwrap())
        .collect();
    pack.finish().unwrap();
    let idx = store.index_files().remove(0);
    let packed = idx.with_extension("pack");
    // Cut in the middle of the third object.
    let file = std::fs::OpenOptions::new().write(true).open(&packed).unwrap();
    file.set_len(("first".len() + "second".len() + 2) as u64).unwrap();
    // A cut line naming an object this pack does not hold.
    let other = hash(b"other");
    let mut text = std::fs::read_to_string(&idx).unwrap();
    text.push_str(&format!("{other} 0 3"));
    std::fs::write(&idx, text).unwrap();
    // A process opening the store now.
    let reopened = ObjectStore::new(dir.path().to_path_buf());
    assert_eq!(reopened.get(&ids[0]).unwrap(), b"first");
    assert_eq!(reopened.get(&ids[1]).unwrap(), b"second");
    assert!(!reopened.contains(&ids[2]) && !reopened.contains(&other));
    let mut pack = reopened.pack();
    assert_eq!(pack.add_bytes(b"third").unwrap(), ids[2]);
    pack.finish().unwrap();
    assert_eq!(reopened.get(&ids[2]).unwrap(), b"third", "stored again");
    // An index whose pack is gone names nothing.
    std::fs::remove_file(&packed).unwrap();
    let reopened = ObjectStore::new(dir.path().to_path_buf());
    assert!(!reopened.contains(&ids[0]));
    assert_eq!(reopened.get(&ids[2]).unwrap(), b"third");
}

/// A pack without an index is discarded when its writer is gone, and kept while its
/// writer (holding its lock) is still adding to it.
#[test]
fn partial_packs_of_dead_writers_go_and_those_being_written_stay() {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::new(dir.path().to_path_buf());
    let mut live = store.pack();
    let id = live.add_bytes(b"being written").unwrap();
    live.file.as_mut().unwrap().1.flush().unwrap();
    let dead = store.pack_dir().join("1-0badf00d.pack");
    std::fs::write(&dead, b"left by a killed brute").unwrap();
    assert_eq!(store.discard_partial().unwrap(), 1);
    assert!(!dead.exists());
    live.finish().unwrap();
    assert_eq!(store.get(&id).unwrap(), b"being written");
    assert_eq!(store.discard_partial().unwrap(), 0, "a finished pack stays");
    // A writer that gives up (an error while adding) takes its pack with it.
    let mut given_up = store.pack();
    given_up.add_bytes(b"never finished").unwrap();
    drop(given_up);
    assert_eq!(store.pack_count(), 1);
    assert_eq!(files(&store.pack_dir()).len(), 2, "one pack and its index");
}
