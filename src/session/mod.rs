//! Sessions and checkpoints: every conversation is saved as it happens (append-only JSON
//! lines, one record per write, so a killed brute loses at most the message being streamed)
//! under the data directory, indexed by project directory; each user turn starts with a
//! checkpoint of the project tree so `/undo` can take the whole turn back — including what
//! shell commands changed — and `/redo` can re-apply it.
//!
//! Layout: `<data>/sessions/<project key>/<session id>.jsonl` and `<data>/objects/` (file
//! contents and manifests, stored by content).

pub mod checkpoint;
pub mod objects;
pub mod prune;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::protocol::TodoItem;
use crate::provider::Message;
use objects::ObjectStore;

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Meta {
        version: u32,
        root: String,
        created_ms: u64,
    },
    Message {
        message: Message,
    },
    Todos {
        todos: Vec<TodoItem>,
    },
    /// A user turn starts: the tree as it was, and the conversation length before the turn.
    Checkpoint {
        turn: u32,
        manifest: String,
        history_len: usize,
        prompt: String,
        at_ms: u64,
    },
    /// The tree as the turn left it, and what was too large to checkpoint.
    TurnEnd {
        turn: u32,
        manifest: String,
        skipped: Vec<String>,
    },
    /// The turn was undone (and the conversation rewound to before it, if `rewound`).
    Undo {
        turn: u32,
        rewound: bool,
    },
    Redo {
        turn: u32,
    },
    /// The person cleared the conversation.
    Clear,
}

/// What is known about one turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    pub turn: u32,
    pub start: String,
    pub end: Option<String>,
    pub history_len: usize,
    pub prompt: String,
    pub at_ms: u64,
    pub skipped: Vec<String>,
    pub undone: bool,
    /// Messages removed when the turn was undone with the conversation; restored by redo.
    pub stash: Vec<Message>,
}

/// A session read back from its file.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub history: Vec<Message>,
    pub todos: Vec<TodoItem>,
    pub turns: Vec<Turn>,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Applies records in order. An unreadable last line (a write cut by a crash) is ignored.
pub fn replay(text: &str) -> Loaded {
    let mut loaded = Loaded::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(record) = serde_json::from_str::<Record>(line) else {
            continue;
        };
        match record {
            Record::Meta { .. } => {}
            Record::Message { message } => loaded.history.push(message),
            Record::Todos { todos } => loaded.todos = todos,
            Record::Checkpoint {
                turn,
                manifest,
                history_len,
                prompt,
                at_ms,
            } => loaded.turns.push(Turn {
                turn,
                start: manifest,
                history_len,
                prompt,
                at_ms,
                ..Turn::default()
            }),
            Record::TurnEnd {
                turn,
                manifest,
                skipped,
            } => {
                if let Some(t) = loaded.turns.iter_mut().find(|t| t.turn == turn) {
                    t.end = Some(manifest);
                    t.skipped = skipped;
                }
            }
            Record::Undo { turn, rewound } => {
                if let Some(t) = loaded.turns.iter_mut().find(|t| t.turn == turn) {
                    t.undone = true;
                    if rewound && t.history_len <= loaded.history.len() {
                        t.stash = loaded.history.split_off(t.history_len);
                    }
                }
            }
            Record::Redo { turn } => {
                if let Some(t) = loaded.turns.iter_mut().find(|t| t.turn == turn) {
                    t.undone = false;
                    loaded.history.append(&mut t.stash);
                }
            }
            Record::Clear => loaded.history.clear(),
        }
    }
    close_dangling_calls(&mut loaded.history);
    loaded
}

/// Gives every tool call without a result one, so the next request is valid.
pub fn close_dangling_calls(history: &mut Vec<Message>) {
    let answered: std::collections::HashSet<String> = history
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let Some(last_assistant) = history.iter().rposition(|m| matches!(m, Message::Assistant { .. })) else {
        return;
    };
    let missing: Vec<(String, String)> = match &history[last_assistant] {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect(),
        _ => Vec::new(),
    };
    for (call_id, name) in missing {
        history.push(Message::Tool {
            call_id,
            name,
            content: "Error: Interrupted: brute stopped before this call finished".to_owned(),
            is_error: true,
        });
    }
}

/// An open session file, appended to as things happen.
pub struct SessionFile {
    pub id: String,
    path: PathBuf,
    file: std::fs::File,
}

impl SessionFile {
    /// Appends one record in a single write, then flushes it to the OS.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }

    /// Makes what was appended durable (at turn ends).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A session as listed for `--resume`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub id: String,
    pub modified_ms: u64,
    pub first_prompt: String,
    pub messages: usize,
    pub bytes: u64,
}

/// The sessions of one project directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    root: PathBuf,
    objects: ObjectStore,
}

/// A short, filesystem-safe key for a project directory: its last component plus a hash.
pub fn project_key(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .unwrap_or_else(|| "root".to_owned());
    let hash = objects::hash(root.to_string_lossy().as_bytes());
    format!("{name}-{}", &hash[..12])
}

impl SessionStore {
    /// The store for `root` under the data directory.
    pub fn new(data_dir: &Path, root: &Path) -> Self {
        Self {
            dir: data_dir.join("sessions").join(project_key(root)),
            root: root.to_path_buf(),
            objects: ObjectStore::new(data_dir.join("objects")),
        }
    }

    pub fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Starts a new session file.
    pub fn create(&self) -> std::io::Result<SessionFile> {
        std::fs::create_dir_all(&self.dir)?;
        let id = format!("{}-{:04x}", now_ms(), fastrand::u16(..));
        let path = self.path(&id);
        let file = std::fs::OpenOptions::new().create_new(true).append(true).open(&path)?;
        let mut session = SessionFile { id, path, file };
        session.append(&Record::Meta {
            version: 1,
            root: self.root.display().to_string(),
            created_ms: now_ms(),
        })?;
        Ok(session)
    }

    /// Opens a session to continue it: its contents and the file to append to.
    pub fn open(&self, id: &str) -> std::io::Result<(SessionFile, Loaded)> {
        let path = self.path(id);
        let text = std::fs::read_to_string(&path)?;
        let loaded = replay(&text);
        let mut file = std::fs::OpenOptions::new().append(true).open(&path)?;
        if !text.is_empty() && !text.ends_with('\n') {
            // A crash cut the last line: end it so the next record starts cleanly.
            file.write_all(b"\n")?;
        }
        Ok((
            SessionFile {
                id: id.to_owned(),
                path,
                file,
            },
            loaded,
        ))
    }

    /// Session ids, newest first.
    pub fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<(SystemTime, String)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".jsonl")?.to_owned();
                let modified = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                Some((modified, id))
            })
            .collect();
        ids.sort_by(|a, b| b.cmp(a));
        ids.into_iter().map(|(_, id)| id).collect()
    }

    /// The most recent session, if any.
    pub fn latest(&self) -> Option<String> {
        self.ids().into_iter().next()
    }

    /// Summaries for a picker, newest first.
    pub fn list(&self) -> Vec<Summary> {
        self.ids()
            .into_iter()
            .filter_map(|id| {
                let path = self.path(&id);
                let meta = std::fs::metadata(&path).ok()?;
                let text = std::fs::read_to_string(&path).ok()?;
                let loaded = replay(&text);
                let first_prompt = loaded
                    .history
                    .iter()
                    .find_map(|m| match m {
                        Message::User { text } => Some(text.lines().next().unwrap_or("").to_owned()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let modified_ms = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as u64);
                Some(Summary {
                    id,
                    modified_ms,
                    first_prompt,
                    messages: loaded.history.len(),
                    bytes: meta.len(),
                })
            })
            .collect()
    }
}

/// Formats milliseconds since the epoch as `YYYY-MM-DD HH:MM` (UTC).
pub fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = crate::agent::prompt::civil_from_days((secs / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        (secs % 86_400) / 3600,
        (secs % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    #[test]
    fn a_cut_last_line_and_dangling_calls_are_handled() {
        let call = ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        };
        let records = [
            Record::Message {
                message: Message::User { text: "hi".into() },
            },
            Record::Message {
                message: Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call],
                },
            },
        ];
        let mut text: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        text.push_str("{\"type\":\"message\",\"message\":{\"role\":\"tool\",\"call_");
        let loaded = replay(&text);
        assert_eq!(loaded.history.len(), 3);
        assert!(matches!(&loaded.history[2], Message::Tool { call_id, is_error: true, .. } if call_id == "c1"));
    }

    #[test]
    fn undo_with_rewind_and_redo_restore_the_conversation() {
        let m = |t: &str| Record::Message {
            message: Message::User { text: t.into() },
        };
        let records = [
            m("one"),
            Record::Checkpoint {
                turn: 1,
                manifest: "a".into(),
                history_len: 1,
                prompt: "two".into(),
                at_ms: 0,
            },
            m("two"),
            Record::TurnEnd {
                turn: 1,
                manifest: "b".into(),
                skipped: vec![],
            },
            Record::Undo { turn: 1, rewound: true },
        ];
        let text: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        let loaded = replay(&text);
        assert_eq!(loaded.history.len(), 1);
        assert!(loaded.turns[0].undone);
        let text = format!("{text}{}\n", serde_json::to_string(&Record::Redo { turn: 1 }).unwrap());
        assert_eq!(replay(&text).history.len(), 2);
        assert_eq!(format_time(0), "1970-01-01 00:00");
    }
}

/// What an undo or redo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMove {
    pub turn: u32,
    pub prompt: String,
    pub report: checkpoint::MoveReport,
    pub skipped: Vec<String>,
    pub rewound: bool,
}

impl TurnMove {
    /// A human summary: what was restored with +/- line counts, and what was left alone.
    pub fn describe(&self, verb: &str) -> String {
        let first = self.prompt.lines().next().unwrap_or("");
        let mut out = format!("{verb} turn {} (\"{first}\"):", self.turn);
        if self.report.moved.is_empty() {
            out.push_str(" no file changes");
        }
        for moved in &self.report.moved {
            out.push_str(&format!(
                "\n  {} {} (+{} -{})",
                moved.action, moved.path, moved.added, moved.removed
            ));
        }
        for path in &self.report.conflicts {
            out.push_str(&format!(
                "\n  skipped {path}: changed since the agent's turn (use force to overwrite it)"
            ));
        }
        for path in &self.skipped {
            out.push_str(&format!("\n  not restorable {path}: over the checkpoint size cap"));
        }
        if self.rewound {
            out.push_str("\n  the conversation was rewound to before that turn");
        }
        out
    }
}

/// Records one agent's session: messages, todos and turn checkpoints.
pub struct Recorder {
    pub store: SessionStore,
    pub file: SessionFile,
    scanner: checkpoint::Scanner,
    pub turns: Vec<Turn>,
    todos: Vec<TodoItem>,
    /// Set when the tree cannot be checkpointed (too large): the session is still saved.
    checkpoints_off: bool,
}

impl Recorder {
    /// A recorder for `file`, continuing `turns` (empty for a new session).
    pub fn new(store: SessionStore, file: SessionFile, loaded: &Loaded, max_file_bytes: u64) -> Self {
        let mut scanner = checkpoint::Scanner::new(store.root().to_path_buf(), store.objects().clone(), max_file_bytes);
        // The newest known state of the tree, from this session or else the previous one of
        // this directory, lets even a new session's first checkpoint skip unchanged files.
        let last_of = |turns: &[Turn]| turns.iter().rev().find_map(|t| t.end.clone());
        let known = last_of(&loaded.turns).or_else(|| {
            let previous = store.ids().into_iter().find(|id| *id != file.id)?;
            let text = std::fs::read_to_string(store.path(&previous)).ok()?;
            last_of(&replay(&text).turns)
        });
        if let Some(manifest) = known.and_then(|id| checkpoint::load_manifest(store.objects(), &id).ok()) {
            scanner.remember(manifest);
        }
        Self {
            store,
            file,
            scanner,
            turns: loaded.turns.clone(),
            todos: loaded.todos.clone(),
            checkpoints_off: false,
        }
    }

    pub fn id(&self) -> &str {
        &self.file.id
    }

    fn snapshot(&mut self) -> std::io::Result<(String, Vec<String>)> {
        let scan = self.scanner.scan()?;
        let id = checkpoint::save_manifest(self.store.objects(), &scan.manifest)?;
        Ok((id, scan.skipped.into_iter().map(|(p, _)| p).collect()))
    }

    /// The checkpoint at the start of a user turn.
    pub fn begin_turn(&mut self, prompt: &str, history_len: usize) -> std::io::Result<()> {
        if self.checkpoints_off {
            return Ok(());
        }
        let (manifest, _) = match self.snapshot() {
            Ok(snapshot) => snapshot,
            Err(error) => {
                // Reported once; the conversation is still recorded.
                self.checkpoints_off = true;
                return Err(error);
            }
        };
        let turn = self.turns.last().map_or(1, |t| t.turn + 1);
        let at_ms = now_ms();
        self.file.append(&Record::Checkpoint {
            turn,
            manifest: manifest.clone(),
            history_len,
            prompt: prompt.to_owned(),
            at_ms,
        })?;
        self.turns.push(Turn {
            turn,
            start: manifest,
            history_len,
            prompt: prompt.to_owned(),
            at_ms,
            ..Turn::default()
        });
        Ok(())
    }

    /// The tree as the turn left it.
    pub fn end_turn(&mut self) -> std::io::Result<()> {
        if self.checkpoints_off || self.turns.last().is_none_or(|t| t.end.is_some()) {
            return self.file.sync();
        }
        let (manifest, skipped) = self.snapshot()?;
        let Some(turn) = self.turns.last_mut() else {
            return Ok(());
        };
        turn.end = Some(manifest.clone());
        turn.skipped = skipped.clone();
        self.file.append(&Record::TurnEnd {
            turn: turn.turn,
            manifest,
            skipped,
        })?;
        self.file.sync()
    }

    pub fn message(&mut self, message: &Message) -> std::io::Result<()> {
        self.file.append(&Record::Message {
            message: message.clone(),
        })
    }

    /// Records the todo list if it changed.
    pub fn todos(&mut self, todos: &[TodoItem]) -> std::io::Result<()> {
        if self.todos != todos {
            self.todos = todos.to_vec();
            self.file.append(&Record::Todos { todos: todos.to_vec() })?;
        }
        Ok(())
    }

    pub fn clear(&mut self) -> std::io::Result<()> {
        self.file.append(&Record::Clear)
    }

    /// Moves the files `turn` changed back to its start (`reverse`) or forward to its end.
    fn move_turn(&mut self, turn: &Turn, reverse: bool, force: bool) -> std::io::Result<checkpoint::MoveReport> {
        let end = turn.end.clone().unwrap_or_default();
        let changes = checkpoint::diff(
            &checkpoint::load_manifest(self.store.objects(), &turn.start)?,
            &checkpoint::load_manifest(self.store.objects(), &end)?,
        );
        let current = self.scanner.scan()?.manifest;
        checkpoint::apply(
            self.store.root(),
            self.store.objects(),
            &changes,
            &current,
            reverse,
            force,
        )
    }

    /// Undoes the newest turn not yet undone: every file it changed goes back, unless the
    /// person changed it since (then it is skipped, or overwritten with `force`). With
    /// `rewind`, the conversation goes back to before the turn too.
    pub fn undo(&mut self, history: &mut Vec<Message>, rewind: bool, force: bool) -> std::io::Result<Option<TurnMove>> {
        let Some(index) = self.turns.iter().rposition(|t| !t.undone && t.end.is_some()) else {
            return Ok(None);
        };
        let turn = self.turns[index].clone();
        let report = self.move_turn(&turn, true, force)?;
        let rewound = rewind && turn.history_len <= history.len();
        self.file.append(&Record::Undo {
            turn: turn.turn,
            rewound,
        })?;
        let t = &mut self.turns[index];
        t.undone = true;
        if rewound {
            t.stash = history.split_off(turn.history_len);
        }
        self.file.sync()?;
        Ok(Some(TurnMove {
            turn: turn.turn,
            prompt: turn.prompt,
            report,
            skipped: turn.skipped,
            rewound,
        }))
    }

    /// Re-applies the turn undone last (only while no newer turn has run since).
    pub fn redo(&mut self, history: &mut Vec<Message>, force: bool) -> std::io::Result<Option<TurnMove>> {
        let active = self.turns.iter().rposition(|t| !t.undone);
        let Some(index) = self
            .turns
            .iter()
            .enumerate()
            .position(|(i, t)| t.undone && active.is_none_or(|a| i > a))
        else {
            return Ok(None);
        };
        let turn = self.turns[index].clone();
        let report = self.move_turn(&turn, false, force)?;
        self.file.append(&Record::Redo { turn: turn.turn })?;
        let t = &mut self.turns[index];
        t.undone = false;
        let rewound = !t.stash.is_empty();
        history.append(&mut t.stash);
        self.file.sync()?;
        Ok(Some(TurnMove {
            turn: turn.turn,
            prompt: turn.prompt,
            report,
            skipped: turn.skipped,
            rewound,
        }))
    }

    /// The checkpoints, newest last, with the number of paths each turn changed.
    pub fn checkpoints(&self) -> Vec<(Turn, usize)> {
        self.turns
            .iter()
            .map(|t| {
                let changed = match (
                    checkpoint::load_manifest(self.store.objects(), &t.start),
                    t.end
                        .as_ref()
                        .map(|e| checkpoint::load_manifest(self.store.objects(), e)),
                ) {
                    (Ok(a), Some(Ok(b))) => checkpoint::diff(&a, &b).len(),
                    _ => 0,
                };
                (t.clone(), changed)
            })
            .collect()
    }
}
