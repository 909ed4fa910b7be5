//! Which brute turns ran in a project at the same time, so a turn's changes are attributed
//! to it only. Every turn keeps a small file in the project's session directory (`turns/`)
//! while it runs and for a day after: its start time, the paths its built-in tools wrote, and
//! its end time. The running process holds an exclusive `flock` on it; a file with no end
//! line whose lock is free belongs to a turn that died (its end is the file's mtime).
//!
//! At the end of a turn, any other turn whose time overlapped it may have made some of the
//! changes the turn's scan found: the paths the other turn's tools wrote are its own, and
//! the rest, unless this turn's own tools wrote it, cannot be told apart (a command of either
//! turn may have made it). Undo leaves both kinds alone (see [`super::checkpoint::Held`]).

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{at_path, now_ms};

/// Finished turns' files are kept this long: a turn running longer may not learn of a turn
/// that started and ended within it.
const KEEP_MS: u64 = 24 * 3600 * 1000;

/// One line of a turn's file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Start { at_ms: u64, pid: u32, session: String },
    Wrote { path: String },
    End { at_ms: u64 },
}

/// The turns of one project, in `<sessions dir>/turns/`.
#[derive(Debug, Clone)]
pub struct Activity {
    dir: PathBuf,
}

/// A turn of this process, registered until [`RunningTurn::finish`] (or the process ends).
#[derive(Debug)]
pub struct RunningTurn {
    file: File,
    path: PathBuf,
    start_ms: u64,
    session: String,
}

/// Another turn whose time overlapped this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub session: String,
    pub pid: u32,
    /// The paths its built-in tools wrote (as far as it had recorded them).
    pub wrote: Vec<String>,
}

fn flock(file: &File, op: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor borrowed for the call; no memory is involved.
    unsafe { libc::flock(file.as_raw_fd(), op) == 0 }
}

fn append(file: &mut File, line: &Line) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    file.write_all(&bytes)
}

/// What one turn's file says.
struct TurnFile {
    start: u64,
    end: Option<u64>,
    pid: u32,
    session: String,
    wrote: Vec<String>,
}

/// Reads a turn's file; `None` when it is not one.
fn read_turn(path: &Path) -> Option<TurnFile> {
    let bytes = crate::files::read_bounded(path, 16 << 20).ok()?;
    let mut lines = bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Line>(l).ok());
    let Some(Line::Start { at_ms, pid, session }) = lines.next() else {
        return None;
    };
    let (mut end, mut wrote) = (None, Vec::new());
    for line in lines {
        match line {
            Line::Wrote { path } => wrote.push(path),
            Line::End { at_ms } => end = Some(at_ms),
            Line::Start { .. } => {}
        }
    }
    Some(TurnFile {
        start: at_ms,
        end,
        pid,
        session,
        wrote,
    })
}

/// When a turn without an end line ended: `None` while its process still holds the lock
/// (it runs), else the file's last change (it died).
fn died_at(path: &Path) -> Option<u64> {
    let file = File::open(path).ok()?;
    if !flock(&file, libc::LOCK_SH | libc::LOCK_NB) {
        return None;
    }
    let modified = file.metadata().ok()?.modified().ok()?;
    Some(modified.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64)
}

impl Activity {
    /// The registry in `sessions_dir` (the project's session directory).
    pub fn new(sessions_dir: &Path) -> Self {
        Self {
            dir: sessions_dir.join("turns"),
        }
    }

    /// Registers a turn of `session` starting now; forgets turns that ended over a day ago.
    pub fn start(&self, session: &str) -> std::io::Result<RunningTurn> {
        std::fs::create_dir_all(&self.dir).map_err(at_path(&self.dir))?;
        let start_ms = now_ms();
        let path = self.dir.join(format!(
            "{start_ms}-{}-{:04x}.turn",
            std::process::id(),
            fastrand::u16(..)
        ));
        let mut file = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(at_path(&path))?;
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            return Err(at_path(&path)(std::io::Error::last_os_error()));
        }
        append(
            &mut file,
            &Line::Start {
                at_ms: start_ms,
                pid: std::process::id(),
                session: session.to_owned(),
            },
        )
        .map_err(at_path(&path))?;
        self.forget_old(start_ms);
        Ok(RunningTurn {
            file,
            path,
            start_ms,
            session: session.to_owned(),
        })
    }

    fn forget_old(&self, now: u64) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let ended = read_turn(&path).and_then(|t| t.end.or_else(|| died_at(&path)));
            if ended.is_some_and(|end| end + KEEP_MS < now) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// Whether a turn other than the one at `own` is running (its file's lock is held).
    fn any_running(&self, own: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p != own)
            .any(|path| File::open(&path).is_ok_and(|file| !flock(&file, libc::LOCK_SH | libc::LOCK_NB)))
    }

    /// The turns of other sessions whose time overlapped `[start_ms, end_ms]` (a session's
    /// own turns follow one another: it has one writer).
    fn overlapping(&self, session: &str, start_ms: u64, end_ms: u64) -> Vec<Overlap> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<Overlap> = entries
            .flatten()
            .map(|e| e.path())
            .filter_map(|path| {
                let turn = read_turn(&path).filter(|t| t.session != session)?;
                let end = turn.end.or_else(|| died_at(&path)).unwrap_or(u64::MAX);
                (turn.start <= end_ms && end >= start_ms).then_some(Overlap {
                    session: turn.session,
                    pid: turn.pid,
                    wrote: turn.wrote,
                })
            })
            .collect();
        found.sort_by(|a, b| (a.pid, &a.session).cmp(&(b.pid, &b.session)));
        found
    }
}

impl RunningTurn {
    /// Records the paths this turn's tools wrote and its end, and returns the other turns
    /// that ran while it did (`activity` is where it was registered).
    pub fn finish(mut self, activity: &Activity, wrote: &[String]) -> std::io::Result<Vec<Overlap>> {
        for path in wrote {
            append(&mut self.file, &Line::Wrote { path: path.clone() }).map_err(at_path(&self.path))?;
        }
        let end_ms = now_ms();
        append(&mut self.file, &Line::End { at_ms: end_ms }).map_err(at_path(&self.path))?;
        let others = activity.overlapping(&self.session, self.start_ms, end_ms);
        // Only a turn running now can still need this record (a turn starting later begins
        // after everything this one did): with none, it goes, so the directory stays small
        // however many turns a project sees.
        if !activity.any_running(&self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        Ok(others)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_turns_see_each_other_and_their_writes() {
        let dir = tempfile::tempdir().unwrap();
        let activity = Activity::new(dir.path());
        let a = activity.start("A").unwrap();
        let b = activity.start("B").unwrap();
        let from_b = b.finish(&activity, &["b.txt".to_owned()]).unwrap();
        assert_eq!(from_b.len(), 1, "B saw A running");
        assert_eq!((from_b[0].session.as_str(), from_b[0].wrote.is_empty()), ("A", true));
        assert!(
            dir.path().join("turns").read_dir().unwrap().count() == 2,
            "B's record stays for A"
        );
        let from_a = a.finish(&activity, &[]).unwrap();
        assert_eq!(from_a.len(), 1, "A saw B, which ended within it");
        assert_eq!(from_a[0].wrote, ["b.txt"], "with what B's tools wrote");
        assert!(
            dir.path().join("turns").read_dir().unwrap().count() == 1,
            "A, the last running, needs no record kept: only B's is left"
        );
    }

    #[test]
    fn only_turns_whose_time_overlaps_count() {
        let dir = tempfile::tempdir().unwrap();
        let activity = Activity::new(dir.path());
        std::fs::create_dir_all(dir.path().join("turns")).unwrap();
        let turn = |name: &str, start: u64, end: u64| {
            let text = format!(
                "{{\"kind\":\"start\",\"at_ms\":{start},\"pid\":1,\"session\":\"{name}\"}}\nnot json\n{{\"kind\":\"end\",\"at_ms\":{end}}}\n"
            );
            std::fs::write(dir.path().join(format!("turns/{name}.turn")), text).unwrap();
        };
        turn("before", 10, 19);
        turn("touching", 15, 20);
        turn("inside", 30, 40);
        turn("around", 5, 100);
        turn("after", 51, 60);
        std::fs::write(dir.path().join("turns/junk.turn"), b"not a turn").unwrap();
        turn("own", 20, 50);
        let mut seen: Vec<String> = activity
            .overlapping("own", 20, 50)
            .into_iter()
            .map(|o| o.session)
            .collect();
        seen.sort();
        assert_eq!(seen, ["around", "inside", "touching"]);
    }

    #[test]
    fn a_dead_turn_ends_at_its_last_change() {
        let dir = tempfile::tempdir().unwrap();
        let activity = Activity::new(dir.path());
        let path = dir.path().join("turns/1-1-0000.turn");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // Started at 1 ms after the epoch, never ended, nobody holds its lock: it died when
        // its file last changed.
        std::fs::write(&path, br#"{"kind":"start","at_ms":1,"pid":1,"session":"dead"}"#).unwrap();
        let two_days = std::time::Duration::from_secs(2 * 24 * 3600);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() - two_days).unwrap();
        let now = now_ms();
        assert!(
            activity.overlapping("own", now - 1000, now).is_empty(),
            "it died long ago"
        );
        // A later turn forgets it.
        activity.start("live").unwrap();
        assert!(!path.exists());
    }
}
