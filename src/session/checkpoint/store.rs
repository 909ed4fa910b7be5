//! Storing manifests: whole, or as the changes from the one before ([`save_manifest_after`]),
//! and loading them back through their chain of deltas (with a small cache of the last loaded).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::encoding;
use super::manifest::Manifest;
use crate::session::objects::ObjectStore;

/// Where a stored manifest sits in its chain of deltas: how many deltas deep, and how many
/// path entries those deltas hold together since the last whole manifest (`None` for a
/// delta written before that was recorded: the next manifest is then stored whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chain {
    pub depth: u32,
    pub entries: Option<u64>,
}

impl Chain {
    /// A manifest stored whole.
    pub const WHOLE: Chain = Chain {
        depth: 0,
        entries: Some(0),
    };
}

/// A stored manifest the next one may be stored against.
pub struct Base<'a> {
    pub id: &'a str,
    pub manifest: &'a Manifest,
    pub chain: Chain,
}

/// Marks a manifest stored as the changes from another in JSON, as brute stored them before
/// the binary form ([`super::encoding`]); a whole one was plain JSON. Both are still read.
pub(super) const DELTA_MAGIC: &[u8] = b"brute-manifest-delta\n";
/// Deltas on deltas stop here: a load reads at most this many objects.
const MAX_DEPTH: u32 = 512;
/// A chain of deltas ends (the next manifest is stored whole) once its deltas hold this many
/// times the entries of a whole manifest. Whole manifests then cost at most 1/`WHOLE_AFTER`
/// of what the deltas cost, and a load parses at most `WHOLE_AFTER + 1` manifests' worth of
/// entries, whatever the size of the tree and the number of turns.
const WHOLE_AFTER: u64 = 2;

/// A manifest stored as the changes from `base`.
#[derive(Serialize, Deserialize)]
pub(super) struct Delta {
    pub(super) base: String,
    depth: u32,
    /// Entries in the chain's deltas up to this one (see [`Chain`]); absent in deltas
    /// written by brute before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entries: Option<u64>,
    #[serde(default)]
    pub(super) set: Manifest,
    #[serde(default)]
    pub(super) del: Vec<String>,
}

impl Delta {
    fn chain(&self) -> Chain {
        Chain {
            depth: self.depth,
            entries: self.entries,
        }
    }
}

/// A stored manifest as read: whole, or the changes from another.
enum Stored {
    Whole(Manifest),
    Delta(Delta),
}

fn read_stored(objects: &ObjectStore, id: &str) -> std::io::Result<Stored> {
    let invalid = |e: &dyn std::fmt::Display| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("manifest {id} in {} is damaged: {e}", objects.dir().display()),
        )
    };
    let bytes = match objects.open_loose(id)? {
        Some(file) => match read_loose(file).map_err(|e| at_object(objects, id, e))? {
            Loose::Whole(decoded) => return decoded.map(Stored::Whole).map_err(|e| invalid(&e)),
            Loose::Other(bytes) => bytes,
        },
        None => objects.get(id)?,
    };
    if let Some(body) = bytes.strip_prefix(encoding::WHOLE) {
        return encoding::decode_whole(body).map(Stored::Whole).map_err(|e| invalid(&e));
    }
    match parse_delta(&bytes) {
        Some(delta) => delta.map(Stored::Delta).map_err(|e| invalid(&e)),
        None => serde_json::from_slice(&bytes)
            .map(Stored::Whole)
            .map_err(|e| invalid(&e)),
    }
}

/// A loose object as [`read_loose`] read it.
enum Loose {
    /// A whole manifest in the binary form, decoded as the file was read.
    Whole(Result<Manifest, encoding::Damaged>),
    /// Anything else: the file's bytes.
    Other(Vec<u8>),
}

fn read_loose(mut file: std::fs::File) -> std::io::Result<Loose> {
    use std::io::Read;
    let len = file.metadata()?.len();
    let mut head = Vec::with_capacity(encoding::WHOLE.len());
    (&mut file).take(encoding::WHOLE.len() as u64).read_to_end(&mut head)?;
    if head == encoding::WHOLE {
        let body = len.saturating_sub(head.len() as u64);
        return decode_whole_noting(file, body).map(Loose::Whole);
    }
    file.read_to_end(&mut head)?;
    Ok(Loose::Other(head))
}

/// A whole manifest's `len` bytes from `source`, decoded; a read that failed is said as such,
/// not as a damaged manifest.
fn decode_whole_noting(source: impl std::io::Read, len: u64) -> std::io::Result<Result<Manifest, encoding::Damaged>> {
    let mut noted = Noted {
        inner: source,
        error: None,
    };
    let decoded = encoding::decode_whole_from(&mut noted, len);
    match noted.error {
        Some(error) => Err(error),
        None => Ok(decoded),
    }
}

/// Reads `inner`, keeping its first error (the decoder can only report a failed read as bytes
/// cut short).
struct Noted<R> {
    inner: R,
    error: Option<std::io::Error>,
}

impl<R: std::io::Read> std::io::Read for Noted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            if self.error.is_none() && e.kind() != std::io::ErrorKind::Interrupted {
                self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
            }
        })
    }
}

fn at_object(objects: &ObjectStore, id: &str, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("cannot read object {id} in {}: {e}", objects.dir().display()),
    )
}

/// Whether `bytes` are a manifest in a form this brute does not know: marked as one, in
/// none of the forms it reads (a newer brute wrote it).
pub fn newer_form(bytes: &[u8]) -> bool {
    bytes.starts_with(b"brute-manifest")
        && ![encoding::WHOLE, encoding::DELTA, DELTA_MAGIC]
            .iter()
            .any(|magic| bytes.starts_with(magic))
}

/// The delta stored in `bytes`, in either form; `None` when they hold a whole manifest.
pub(super) fn parse_delta(bytes: &[u8]) -> Option<std::io::Result<Delta>> {
    if let Some(body) = bytes.strip_prefix(encoding::DELTA) {
        return Some(
            encoding::decode_delta(body)
                .map(|d| Delta {
                    base: d.base,
                    depth: d.depth,
                    entries: d.entries,
                    set: d.set,
                    del: d.del,
                })
                .map_err(std::io::Error::other),
        );
    }
    let json = bytes.strip_prefix(DELTA_MAGIC)?;
    Some(serde_json::from_slice(json).map_err(std::io::Error::other))
}

/// What changed from one manifest to the next: the entries set (new or different) and the
/// paths gone.
#[derive(Debug, Default)]
pub struct Changes {
    pub set: Manifest,
    pub del: Vec<String>,
}

impl Changes {
    /// The changes from `base` to `manifest`.
    pub fn between(base: &Manifest, manifest: &Manifest) -> Self {
        let mut changes = Changes::default();
        for (path, was, now) in super::manifest::pairs(base, manifest) {
            match (was, now) {
                (Some(_), None) => changes.del.push(path.to_owned()),
                (was, Some(now)) if was != Some(now) => {
                    changes.set.insert(path.to_owned(), now.clone());
                }
                _ => {}
            }
        }
        changes
    }
}

/// Stores `manifest` whole, or, when `after` is given and the changes from it are few, as
/// those changes: each turn then costs disk in proportion to what it changed, not to the size
/// of the tree. A manifest equal to `after`'s is not stored again: its id is returned.
/// Returns the id and where it sits in its chain.
pub fn save_manifest_after(
    objects: &ObjectStore,
    manifest: &Manifest,
    after: Option<Base<'_>>,
) -> std::io::Result<(String, Chain)> {
    match after {
        Some(base) => save_changes(
            objects,
            manifest,
            base.id,
            base.chain,
            Changes::between(base.manifest, manifest),
        ),
        None => Ok((save_manifest(objects, manifest)?, Chain::WHOLE)),
    }
}

/// [`save_manifest_after`] with the changes from the manifest stored as `base` already known
/// (a walk that updated the last manifest in place found them; it is gone).
pub fn save_changes(
    objects: &ObjectStore,
    manifest: &Manifest,
    base: &str,
    chain: Chain,
    changes: Changes,
) -> std::io::Result<(String, Chain)> {
    let Changes { set, del } = changes;
    if set.is_empty() && del.is_empty() {
        return Ok((base.to_owned(), chain));
    }
    let changed = (set.len() + del.len()) as u64;
    let entries = chain.entries.map(|e| e + changed);
    let whole = manifest.len() as u64;
    if let Some(entries) = entries
        && chain.depth < MAX_DEPTH
        && changed <= whole / 4
        && entries <= WHOLE_AFTER * whole
    {
        let delta = encoding::Delta {
            base: base.to_owned(),
            depth: chain.depth + 1,
            entries: Some(entries),
            set,
            del,
        };
        let chain = Chain {
            depth: delta.depth,
            entries: delta.entries,
        };
        return Ok((objects.put(&encoding::encode_delta(&delta))?, chain));
    }
    Ok((save_manifest(objects, manifest)?, Chain::WHOLE))
}

/// The last manifests loaded, by id (listing or undoing turns in order loads each one's base
/// just before it).
type Loaded = (String, std::sync::Arc<Manifest>, Chain);
static LOADED: std::sync::Mutex<Vec<Loaded>> = std::sync::Mutex::new(Vec::new());
const LOADED_KEPT: usize = 8;

fn cached(id: &str) -> Option<(std::sync::Arc<Manifest>, Chain)> {
    let loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded
        .iter()
        .find(|(known, ..)| known == id)
        .map(|(_, manifest, chain)| (manifest.clone(), *chain))
}

/// Loads manifest `id`: reads its deltas down to a whole manifest (or one loaded lately),
/// then applies them oldest first to one copy. A chain longer than [`MAX_DEPTH`] (a loop in
/// a damaged store) is an error, never a hang. `keep`: remember it among the last loaded
/// (a scanner's seed is not: the scanner updates it in place, which a shared copy prevents).
pub(super) fn load_with_depth(
    objects: &ObjectStore,
    id: &str,
    keep: bool,
) -> std::io::Result<(std::sync::Arc<Manifest>, Chain)> {
    if let Some(found) = cached(id) {
        if !keep {
            // Its one holder from now on, unless someone else holds it too.
            LOADED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(known, ..)| known != id);
        }
        return Ok(found);
    }
    let mut deltas: Vec<Delta> = Vec::new();
    let mut next = id.to_owned();
    let base = loop {
        if let Some((manifest, _)) = cached(&next) {
            break manifest;
        }
        match read_stored(objects, &next)? {
            Stored::Whole(manifest) => break std::sync::Arc::new(manifest),
            Stored::Delta(delta) => {
                if deltas.len() > MAX_DEPTH as usize {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "manifest {id} in {} is stored as a chain of more than {MAX_DEPTH} changes (a damaged store)",
                            objects.dir().display()
                        ),
                    ));
                }
                next = delta.base.clone();
                deltas.push(delta);
            }
        }
    };
    let chain = deltas.first().map_or(Chain::WHOLE, Delta::chain);
    let manifest = if deltas.is_empty() {
        base
    } else {
        let mut manifest = std::sync::Arc::unwrap_or_clone(base);
        for delta in deltas.into_iter().rev() {
            for path in &delta.del {
                manifest.remove(path);
            }
            manifest.extend(delta.set);
        }
        std::sync::Arc::new(manifest)
    };
    if !keep {
        return Ok((manifest, chain));
    }
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if loaded.len() >= LOADED_KEPT {
        loaded.remove(0);
    }
    loaded.push((id.to_owned(), manifest.clone(), chain));
    Ok((manifest, chain))
}

/// The ids a stored manifest needs besides its contents: itself and the manifests its
/// changes are stored against (for pruning). Stops at one that cannot be read.
pub fn manifest_chain(objects: &ObjectStore, id: &str) -> Vec<String> {
    manifest_chain_until(objects, id, |_| false)
}

/// [`manifest_chain`], stopping before the first id `known` accepts (a prune that marked a
/// manifest has marked its whole chain: a session's turns share one chain, and walking it
/// again for each would cost turns × depth reads).
pub fn manifest_chain_until(objects: &ObjectStore, id: &str, known: impl Fn(&str) -> bool) -> Vec<String> {
    let mut chain = Vec::new();
    let mut next = Some(id.to_owned());
    while let Some(id) = next.take() {
        if known(&id) || chain.contains(&id) || chain.len() > MAX_DEPTH as usize {
            break;
        }
        let base = objects
            .get(&id)
            .ok()
            .and_then(|bytes| parse_delta(&bytes)?.ok())
            .map(|delta| delta.base);
        chain.push(id);
        next = base;
    }
    chain
}

/// Stores a manifest as an object; returns its id.
pub fn save_manifest(objects: &ObjectStore, manifest: &Manifest) -> std::io::Result<String> {
    objects.put_written(|to| encoding::write_whole(to, manifest))
}

/// Loads a stored manifest (following the changes it is stored as, if any).
/// [`load_manifest`] without a copy (the cached manifest itself).
pub fn load_shared(objects: &ObjectStore, id: &str) -> std::io::Result<Arc<Manifest>> {
    load_with_depth(objects, id, true).map(|(manifest, _)| manifest)
}

pub fn load_manifest(objects: &ObjectStore, id: &str) -> std::io::Result<Manifest> {
    load_with_depth(objects, id, true).map(|(manifest, _)| (*manifest).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::checkpoint::{Cursor, FileState};

    fn file(id: &str) -> FileState {
        FileState {
            id: id.into(),
            size: 1,
            mode: 0o644,
            mtime_ns: 1,
            ctime_ns: 1,
            dir: false,
            link: false,
            git: Default::default(),
        }
    }

    /// A scanner's seed found among the last loaded leaves them: the scanner updates its one
    /// copy in place, which a copy kept there would turn into a second.
    #[test]
    fn a_seed_taken_from_the_loaded_ones_is_its_one_copy() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let manifest: Manifest = (0..3)
            .map(|i| (format!("seed-only-{i}"), file(&format!("{i:064}"))))
            .collect();
        let id = save_manifest(&objects, &manifest).unwrap();
        // Kept among the last loaded (other tests' loads could push it out, never in).
        drop(load_shared(&objects, &id).unwrap());
        let (seed, _) = load_with_depth(&objects, &id, false).unwrap();
        assert_eq!(*seed, manifest);
        assert_eq!(std::sync::Arc::strong_count(&seed), 1);
        assert!(cached(&id).is_none());
    }

    #[test]
    fn manifests_are_stored_as_small_changes_and_load_whole() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let mut m0 = Manifest::new();
        for i in 0..100 {
            m0.insert(format!("f{i:03}"), file(&format!("{i:064}")));
        }
        let (id0, chain0) = save_manifest_after(&objects, &m0, None).unwrap();
        assert_eq!(chain0, Chain::WHOLE);
        let mut m1 = m0.clone();
        m1.insert("f000".into(), file(&"a".repeat(64)));
        m1.remove("f001");
        m1.insert("new".into(), file(&"b".repeat(64)));
        let base = Base {
            id: &id0,
            manifest: &m0,
            chain: chain0,
        };
        let (id1, chain1) = save_manifest_after(&objects, &m1, Some(base)).unwrap();
        assert_eq!(
            chain1,
            Chain {
                depth: 1,
                entries: Some(3)
            }
        );
        let stored = objects.get(&id1).unwrap();
        assert!(
            stored.starts_with(encoding::DELTA) && stored.len() < 600,
            "{} bytes",
            stored.len()
        );
        // A fresh process (no cached loads) gets the whole manifest back.
        LOADED.lock().unwrap().clear();
        assert_eq!(load_manifest(&objects, &id1).unwrap(), m1);
        assert_eq!(manifest_chain(&objects, &id1), [id1.clone(), id0.clone()]);
        // Many changes: stored whole.
        let m2: Manifest = (0..100).map(|i| (format!("g{i}"), file(&"c".repeat(64)))).collect();
        let base = Base {
            id: &id1,
            manifest: &m1,
            chain: chain1,
        };
        let (id2, chain2) = save_manifest_after(&objects, &m2, Some(base)).unwrap();
        assert_eq!(
            (chain2, manifest_chain(&objects, &id2)),
            (Chain::WHOLE, vec![id2.clone()])
        );
        // A delta whose base is gone (a damaged store) is an error naming the missing
        // object, never a partial manifest.
        let orphan = Delta {
            base: "f".repeat(64),
            depth: 1,
            entries: Some(0),
            set: Manifest::new(),
            del: Vec::new(),
        };
        let mut bytes = DELTA_MAGIC.to_vec();
        serde_json::to_writer(&mut bytes, &orphan).unwrap();
        let orphan = objects.put(&bytes).unwrap();
        let error = load_manifest(&objects, &orphan).unwrap_err();
        assert!(error.to_string().contains(&"f".repeat(64)), "{error}");
        assert_eq!(manifest_chain(&objects, &orphan), [orphan.clone(), "f".repeat(64)]);
        // Deltas stop at MAX_DEPTH: then a whole one again.
        let base = Base {
            id: &id0,
            manifest: &m0,
            chain: Chain {
                depth: MAX_DEPTH,
                entries: Some(0),
            },
        };
        assert_eq!(save_manifest_after(&objects, &m1, Some(base)).unwrap().1, Chain::WHOLE);
    }

    #[test]
    fn a_whole_manifest_is_read_as_a_stream_and_one_cut_short_on_disk_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        // Several of the reader's windows long.
        let m0: Manifest = (0..4000)
            .map(|i| {
                (
                    format!("src/module-{:02}/file-{i:05}.rs", i % 13),
                    file(&format!("{i:064}")),
                )
            })
            .collect();
        let (id, chain) = save_manifest_after(&objects, &m0, None).unwrap();
        assert_eq!(chain, Chain::WHOLE);
        LOADED.lock().unwrap().clear();
        assert_eq!(load_manifest(&objects, &id).unwrap(), m0);
        let loose = dir.path().join(&id[..2]).join(&id[2..]);
        let bytes = std::fs::read(&loose).unwrap();
        assert!(bytes.starts_with(encoding::WHOLE) && bytes.len() > 3 * 64 * 1024);
        for cut in [encoding::WHOLE.len() - 1, bytes.len() / 2, bytes.len() - 1] {
            std::fs::remove_file(&loose).unwrap();
            std::fs::write(&loose, &bytes[..cut]).unwrap();
            LOADED.lock().unwrap().clear();
            let error = load_manifest(&objects, &id).unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "cut at {cut}: {error}");
        }
    }

    #[test]
    fn a_read_that_fails_midway_is_an_io_error_not_damage() {
        struct Failing<'a>(&'a [u8]);
        impl std::io::Read for Failing<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() {
                    return Err(std::io::Error::other("the disk failed"));
                }
                let n = buf.len().min(self.0.len()).min(1000);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let m: Manifest = (0..3000)
            .map(|i| (format!("f{i:05}"), file(&format!("{i:064}"))))
            .collect();
        let bytes = encoding::encode_whole(&m);
        // Written in pieces, the same bytes (3,000 entries take several pieces).
        let mut written = Vec::new();
        encoding::write_whole(&mut written, &m).unwrap();
        assert!(written == bytes && bytes.len() > 2 * 64 * 1024, "{}", bytes.len());
        let body = &bytes[encoding::WHOLE.len()..];
        let whole = decode_whole_noting(Failing(body), body.len() as u64).unwrap();
        assert!(whole.unwrap() == m);
        let error = decode_whole_noting(Failing(&body[..body.len() / 2]), body.len() as u64).unwrap_err();
        assert_eq!(error.to_string(), "the disk failed");
    }

    /// Manifests as brute wrote them before chains counted their entries: a whole one (plain
    /// JSON) and a delta without `entries`, spelled out byte for byte. They load, chain and
    /// walk as before, and the next manifest stored after such a delta is stored whole (the
    /// length of the old chain is unknown), after which chains count again.
    #[test]
    fn manifests_in_the_old_format_still_load_and_the_next_one_is_stored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let (a, b, c) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        let whole = format!(
            r#"{{"d":{{"id":"","size":0,"mode":16877,"mtime_ns":0,"ctime_ns":0,"dir":true}},"d/x.txt":{{"id":"{a}","size":1,"mode":33188,"mtime_ns":5,"ctime_ns":6}},"y.txt":{{"id":"{b}","size":2,"mode":33261,"mtime_ns":7}}}}"#
        );
        let whole = objects.put(whole.as_bytes()).unwrap();
        let delta = format!(
            "brute-manifest-delta\n{{\"base\":\"{whole}\",\"depth\":1,\"set\":{{\"d/z\":{{\"id\":\"{c}\",\"size\":3,\"mode\":511,\"mtime_ns\":0,\"ctime_ns\":0,\"link\":true}}}},\"del\":[\"y.txt\"]}}"
        );
        let delta = objects.put(delta.as_bytes()).unwrap();
        LOADED.lock().unwrap().clear();
        let loaded = load_manifest(&objects, &delta).unwrap();
        assert_eq!(loaded.keys().collect::<Vec<_>>(), ["d", "d/x.txt", "d/z"]);
        assert!(loaded["d"].dir && loaded["d/z"].link && loaded["d/z"].id == c);
        assert_eq!((loaded["d/x.txt"].mode, loaded["d/x.txt"].ctime_ns), (33188, 6));
        let old_whole = load_manifest(&objects, &whole).unwrap();
        assert_eq!(old_whole["y.txt"].ctime_ns, 0, "ctime absent in the oldest manifests");
        assert_eq!(manifest_chain(&objects, &delta), [delta.clone(), whole.clone()]);
        let mut cursor = Cursor::default();
        cursor.move_to(&objects, &whole).unwrap();
        assert_eq!(cursor.move_to(&objects, &delta).unwrap(), 2);
        // The next manifest after the old delta: stored whole, then as changes again.
        let (_, chain) = load_with_depth(&objects, &delta, true).unwrap();
        assert_eq!(
            chain,
            Chain {
                depth: 1,
                entries: None
            }
        );
        let mut next = loaded.clone();
        for i in 0..8 {
            next.insert(format!("new{i}"), file(&"e".repeat(64)));
        }
        let base = Base {
            id: &delta,
            manifest: &loaded,
            chain,
        };
        let (id, chain) = save_manifest_after(&objects, &next, Some(base)).unwrap();
        assert_eq!(chain, Chain::WHOLE);
        assert!(!objects.get(&id).unwrap().starts_with(DELTA_MAGIC));
        let mut after = next.clone();
        after.remove("new0");
        let base = Base {
            id: &id,
            manifest: &next,
            chain,
        };
        let (_, chain) = save_manifest_after(&objects, &after, Some(base)).unwrap();
        assert_eq!(
            chain,
            Chain {
                depth: 1,
                entries: Some(1)
            }
        );
    }

    /// A tree that did not change is not stored again, and a chain ends once its deltas
    /// hold [`WHOLE_AFTER`] manifests' worth of entries: whole manifests then cost a fraction
    /// of the deltas (every 32 turns, they were most of a long session's store), and every
    /// manifest of the chain loads whole in a fresh process.
    #[test]
    fn chains_end_by_the_entries_they_hold_and_unchanged_trees_cost_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let mut manifest: Manifest = (0..100)
            .map(|i| (format!("f{i:03}"), file(&format!("{i:064}"))))
            .collect();
        let (mut id, mut chain) = save_manifest_after(&objects, &manifest, None).unwrap();
        let mut stored = vec![(id.clone(), manifest.clone())];
        let mut wholes = 1;
        for step in 0..1000u64 {
            let previous = manifest.clone();
            manifest.insert(format!("f{:03}", step % 100), file(&format!("e{step:063x}")));
            let base = Base {
                id: &id,
                manifest: &previous,
                chain,
            };
            (id, chain) = save_manifest_after(&objects, &manifest, Some(base)).unwrap();
            wholes += usize::from(chain == Chain::WHOLE);
            // The same tree again (the next turn's start): the same id, nothing written.
            let count = objects.list().len();
            let base = Base {
                id: &id,
                manifest: &manifest,
                chain,
            };
            assert_eq!(
                save_manifest_after(&objects, &manifest, Some(base)).unwrap(),
                (id.clone(), chain)
            );
            assert_eq!(objects.list().len(), count);
            stored.push((id.clone(), manifest.clone()));
        }
        // One change per step, 100 entries a manifest: a whole one every 201 manifests.
        assert_eq!(wholes, 5, "{wholes} whole manifests for 1,001");
        LOADED.lock().unwrap().clear();
        for (id, expected) in stored.iter().rev().step_by(37) {
            assert_eq!(&load_manifest(&objects, id).unwrap(), expected);
        }
    }

    /// A damaged store whose deltas form a loop is an error on load, never a hang or a
    /// stack overflow; the chain stops where it repeats.
    #[test]
    fn a_loop_of_deltas_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        // Two deltas naming each other cannot be made by content addressing; one naming
        // itself through a missing middle can: a -> b, and b written as a delta to a.
        let a_bytes = |base: &str| format!("brute-manifest-delta\n{{\"base\":\"{base}\",\"depth\":1}}");
        let mut b = "0".repeat(64);
        // Find the fixed point by writing b after a: b's content names a's id.
        let a = objects.put(a_bytes(&b).as_bytes()).unwrap();
        b = objects.put(a_bytes(&a).as_bytes()).unwrap();
        // Now a names "000…" (missing), b names a: make "000…" exist as a delta naming b.
        let zero = dir.path().join("00").join("0".repeat(62));
        std::fs::create_dir_all(zero.parent().unwrap()).unwrap();
        std::fs::write(&zero, a_bytes(&b)).unwrap();
        LOADED.lock().unwrap().clear();
        let error = load_manifest(&objects, &b).unwrap_err();
        assert!(error.to_string().contains("chain of more than"), "{error}");
        assert_eq!(manifest_chain(&objects, &b), [b.clone(), a.clone(), "0".repeat(64)]);
    }
}
