//! `/diff`: what a turn, or the whole session, changed in the tree, read from brute's own
//! checkpoints (no git needed). Two manifests are compared and every changed path becomes a
//! unified diff; what cannot be shown as text (binary content, a file too large to load, a
//! symlink, a mode change) gets one line saying what changed.

use super::checkpoint::{self, FileState, Manifest};
use super::objects::ObjectStore;

/// Files larger than this are summarized, not diffed (a diff of them helps nobody on screen).
const MAX_SHOWN_BYTES: u64 = 1024 * 1024;
/// The rendered diff stops after this many lines, saying how many files were left out.
const MAX_LINES: usize = 5_000;

/// The changes from `before` to `after` as one unified diff (git-style headers per file),
/// and the number of changed paths.
pub fn render(objects: &ObjectStore, before: &Manifest, after: &Manifest) -> (String, usize) {
    let changes = checkpoint::diff(before, after);
    let mut out = String::new();
    let mut lines = 0;
    for (i, change) in changes.iter().enumerate() {
        if lines >= MAX_LINES {
            out.push_str(&format!(
                "… {} more changed file(s) not shown (the diff passed {MAX_LINES} lines)\n",
                changes.len() - i
            ));
            break;
        }
        let part = file_diff(objects, &change.path, change.before.as_ref(), change.after.as_ref());
        lines += part.lines().count();
        out.push_str(&part);
    }
    (out, changes.len())
}

/// One path's part of the diff.
fn file_diff(objects: &ObjectStore, path: &str, before: Option<&FileState>, after: Option<&FileState>) -> String {
    let mut head = format!("diff a/{path} b/{path}\n");
    match (before, after) {
        (None, Some(new)) => head.push_str(&format!("new {} mode {:o}\n", kind(new), new.mode & 0o7777)),
        (Some(old), None) => head.push_str(&format!("deleted {} mode {:o}\n", kind(old), old.mode & 0o7777)),
        (Some(old), Some(new)) if kind(old) != kind(new) => {
            head.push_str(&format!("{} became a {}\n", kind(old), kind(new)));
        }
        (Some(old), Some(new)) if !old.link && old.mode & 0o7777 != new.mode & 0o7777 => {
            head.push_str(&format!("mode {:o} → {:o}\n", old.mode & 0o7777, new.mode & 0o7777))
        }
        _ => {}
    }
    if before.is_some_and(|s| s.dir) || after.is_some_and(|s| s.dir) {
        return head;
    }
    if before.is_some_and(|s| s.link) || after.is_some_and(|s| s.link) {
        let target = |s: Option<&FileState>| match s {
            Some(s) if s.link => objects
                .get(&s.id.to_string())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|_| "(stored target missing)".to_owned()),
            Some(_) => "(a file)".to_owned(),
            None => "(none)".to_owned(),
        };
        head.push_str(&format!("link {} → {}\n", target(before), target(after)));
        return head;
    }
    if before.is_some_and(|s| Some(&s.id) == after.map(|a| &a.id)) {
        return head; // only the mode changed
    }
    let text = |state: Option<&FileState>| -> Result<String, String> {
        let Some(state) = state else {
            return Ok(String::new());
        };
        if state.size > MAX_SHOWN_BYTES {
            return Err(format!("{} bytes, too large to show", state.size));
        }
        let bytes = objects
            .get(&state.id.to_string())
            .map_err(|_| "its stored content is missing".to_owned())?;
        if content_inspector::inspect(&bytes).is_binary() {
            return Err(format!("binary, {} bytes", bytes.len()));
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match (text(before), text(after)) {
        (Ok(old), Ok(new)) => {
            let shown_old = if before.is_some() {
                format!("a/{path}")
            } else {
                "/dev/null".to_owned()
            };
            let shown_new = if after.is_some() {
                format!("b/{path}")
            } else {
                "/dev/null".to_owned()
            };
            head.push_str(
                &similar::TextDiff::from_lines(&old, &new)
                    .unified_diff()
                    .context_radius(3)
                    .header(&shown_old, &shown_new)
                    .to_string(),
            );
            if !head.ends_with('\n') {
                head.push('\n');
            }
        }
        (old, new) => {
            let say = |side: Result<String, String>, present: bool| match (side, present) {
                (_, false) => "(none)".to_owned(),
                (Ok(text), true) => format!("text, {} bytes", text.len()),
                (Err(why), true) => why,
            };
            head.push_str(&format!(
                "content changed: {} → {}\n",
                say(old, before.is_some()),
                say(new, after.is_some())
            ));
        }
    }
    head
}

fn kind(state: &FileState) -> &'static str {
    if state.dir {
        "directory"
    } else if state.link {
        "link"
    } else {
        "file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, ObjectStore) {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().join("objects"));
        (dir, objects)
    }

    fn file(objects: &ObjectStore, bytes: &[u8], mode: u32) -> FileState {
        FileState {
            id: objects.put(bytes).unwrap().into(),
            size: bytes.len() as u64,
            mode,
            mtime_ns: 0,
            ctime_ns: 0,
            dir: false,
            link: false,
            git: Default::default(),
        }
    }

    #[test]
    fn text_changes_are_unified_diffs_and_the_rest_one_line_each() {
        let (_dir, objects) = store();
        let mut before = Manifest::new();
        let mut after = Manifest::new();
        before.insert("src/a.rs".into(), file(&objects, b"one\ntwo\nthree\n", 0o100644));
        after.insert("src/a.rs".into(), file(&objects, b"one\nTWO\nthree\n", 0o100644));
        after.insert("new.txt".into(), file(&objects, b"hello\n", 0o100644));
        before.insert("gone.txt".into(), file(&objects, b"bye\n", 0o100644));
        before.insert("run.sh".into(), file(&objects, b"#!/bin/sh\n", 0o100644));
        after.insert("run.sh".into(), file(&objects, b"#!/bin/sh\n", 0o100755));
        after.insert("logo.png".into(), file(&objects, b"\x89PNG\0\0\x01", 0o100644));
        let mut link = file(&objects, b"../elsewhere", 0o120777);
        link.link = true;
        after.insert("link".into(), link);

        let (text, changed) = render(&objects, &before, &after);
        assert_eq!(changed, 6);
        assert!(text.contains("--- a/src/a.rs\n+++ b/src/a.rs\n"), "{text}");
        assert!(text.contains("-two\n+TWO\n"), "{text}");
        assert!(text.contains("--- /dev/null\n+++ b/new.txt\n"), "{text}");
        assert!(text.contains("+hello\n"), "{text}");
        assert!(text.contains("deleted file mode 644\n"), "{text}");
        assert!(text.contains("-bye\n"), "{text}");
        assert!(text.contains("diff a/run.sh b/run.sh\nmode 644 → 755\n"), "{text}");
        assert!(!text.contains("+#!/bin/sh"), "a mode change shows no content: {text}");
        assert!(text.contains("content changed: (none) → binary, 7 bytes"), "{text}");
        assert!(text.contains("link (none) → ../elsewhere"), "{text}");
    }

    #[test]
    fn nothing_changed_renders_nothing() {
        let (_dir, objects) = store();
        let mut same = Manifest::new();
        same.insert("a".into(), file(&objects, b"x", 0o100644));
        assert_eq!(render(&objects, &same, &same), (String::new(), 0));
    }
}
