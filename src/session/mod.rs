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
mod recorder;

pub use recorder::{Recorder, TurnMove};

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
    /// How long a tool call took (written by earlier versions; now part of `tool_result`).
    Timing {
        call_id: String,
        duration_ms: u64,
    },
    /// A finished tool call, written as soon as it finished.
    ToolResult {
        result: crate::protocol::ToolResult,
    },
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
    /// Tool call durations by call id.
    pub durations: std::collections::BTreeMap<String, u64>,
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
            Record::Timing { call_id, duration_ms } => {
                loaded.durations.insert(call_id, duration_ms);
            }
            Record::ToolResult { result } => {
                loaded.durations.insert(result.call_id.clone(), result.duration_ms);
                loaded.history.push(Message::Tool {
                    call_id: result.call_id,
                    name: result.name,
                    content: result.content,
                    is_error: result.is_error,
                });
            }
        }
    }
    close_dangling_calls(&mut loaded.history);
    order_tool_results(&mut loaded.history);
    loaded
}

/// Puts the tool results that follow an assistant message into the order of its calls
/// (results are recorded as they finish, which may be out of order).
pub fn order_tool_results(history: &mut [Message]) {
    let mut i = 0;
    while i < history.len() {
        let order: Vec<String> = match &history[i] {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                tool_calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let start = i + 1;
        let mut end = start;
        while end < history.len() && matches!(history[end], Message::Tool { .. }) {
            end += 1;
        }
        history[start..end].sort_by_key(|m| match m {
            Message::Tool { call_id, .. } => order.iter().position(|id| id == call_id).unwrap_or(usize::MAX),
            _ => usize::MAX,
        });
        i = end.max(start);
    }
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
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(&self.dir)?;
        let id = format!("{}-{:04x}", now_ms(), fastrand::u16(..));
        let path = self.path(&id);
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
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
                // Cheap on big sessions: count message records without parsing them, and parse
                // only until the first prompt.
                let messages = text.matches("{\"type\":\"message\"").count();
                let first_prompt = text
                    .lines()
                    .filter(|l| l.starts_with("{\"type\":\"message\""))
                    .find_map(|l| match serde_json::from_str::<Record>(l) {
                        Ok(Record::Message {
                            message: Message::User { text },
                        }) => Some(text.lines().next().unwrap_or("").to_owned()),
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
                    messages,
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
                    reasoning: Vec::new(),
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
