//! Sessions and checkpoints: every conversation is saved as it happens (append-only JSON
//! lines, one record per write, so a killed brute loses at most the message being streamed)
//! under the data directory, indexed by project directory; each user turn starts with a
//! checkpoint of the project tree so `/undo` can take the whole turn back — including what
//! shell commands changed — and `/redo` can re-apply it. In a tree over the checkpoint budget
//! a turn records only what the built-in tools change (see [`keep`] and
//! [`Record::ToolsTurn`]).
//!
//! Layout: `<data>/sessions/<project key>/<session id>.jsonl` and `<data>/objects/` (file
//! contents and manifests, stored by content).

pub mod activity;
pub mod checkpoint;
pub mod diff;
pub mod git_baseline;
mod git_index;
pub mod keep;
pub mod lock;
pub mod objects;
pub mod prune;
mod recorder;
pub mod relpath;
pub mod stat;
pub mod watch;
pub mod whose;

pub use recorder::{Recorder, Taken, TurnCheckpoint, TurnMove, checkpoints, over_budget_notice};
pub use whose::TurnWork;

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
    /// A user turn starts in a tree over the checkpoint budget: its manifests hold only what
    /// the built-in tools change (its start is empty here; [`Record::Touched`] and its
    /// [`Record::TurnEnd`] say more). A record of its own, so a brute that does not know it
    /// skips the turn rather than reading its manifests as whole trees.
    ToolsTurn {
        turn: u32,
        manifest: String,
        history_len: usize,
        prompt: String,
        at_ms: u64,
    },
    /// A [`Record::ToolsTurn`] so far: the states of the paths its built-in tools were about
    /// to change, before the first change (a manifest), and those of them that did not exist.
    /// The newest one of a turn is its start.
    Touched {
        turn: u32,
        start: String,
        created: Vec<String>,
    },
    /// The tree as the turn left it, and what was too large to checkpoint.
    TurnEnd {
        turn: u32,
        manifest: String,
        skipped: Vec<String>,
        /// What another brute turn running at the same time may have changed.
        #[serde(default, skip_serializing_if = "checkpoint::Held::is_empty")]
        held: checkpoint::Held,
        /// A [`Record::ToolsTurn`]'s final start and made paths, repeated here (the turn's
        /// end then does not depend on its last [`Record::Touched`] line).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools_start: Option<(String, Vec<String>)>,
    },
    /// The turn was undone (and the conversation rewound to before it, if `rewound`). `left`
    /// are the paths the undo left alone that a forced undo would take back (see
    /// [`Turn::left`]); a later record of the same turn (a forced undo of them) replaces it.
    Undo {
        turn: u32,
        rewound: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left: Vec<String>,
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
    /// The conversation was compacted to this history.
    Compaction {
        history: Vec<Message>,
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
    /// Paths undo leaves alone: another turn ran at the same time (see [`activity`]).
    pub held: checkpoint::Held,
    pub undone: bool,
    /// Messages removed when the turn was undone with the conversation; restored by redo.
    pub stash: Vec<Message>,
    /// Its manifests hold only the paths the built-in tools changed (see [`Record::Checkpoint`]).
    pub tools_only: bool,
    /// For such a turn: the paths its tools made (absent from its start).
    pub created: Vec<String>,
    /// What its undo left alone (changed since, or the person's) that `undo --force` takes
    /// back next, before any older turn.
    pub left: Vec<String>,
}

/// A session read back from its file.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub history: Vec<Message>,
    pub todos: Vec<TodoItem>,
    pub turns: Vec<Turn>,
    /// How each tool call went (its time, how it failed), by call id.
    pub outcomes: std::collections::BTreeMap<String, crate::protocol::CallOutcome>,
    /// Lines that could not be used (1-based line number, why): the rest still loads.
    pub damaged: Vec<(usize, String)>,
    /// How the conversation was repaired so a provider accepts it.
    pub repairs: Vec<String>,
    /// The conversation as if it had never been compacted (for undo across a compaction).
    pub full_history: Vec<Message>,
    /// The turns during which the conversation was compacted.
    pub compacted_in: Vec<u32>,
}

/// Before an undo that rewinds the conversation to `history_len` messages as of `turn`: when
/// the conversation was compacted since that turn began, the uncompacted history is the one to
/// rewind (that turn fitted the window once). Returns whether `history` was replaced.
pub fn uncompact_for_undo(
    history: &mut Vec<Message>,
    full: &[Message],
    compacted_in: &[u32],
    turn: u32,
    history_len: usize,
) -> bool {
    if compacted_in.iter().any(|c| *c >= turn) && history_len <= full.len() {
        *history = full.to_vec();
        repair_calls(history);
        return true;
    }
    false
}

impl Loaded {
    /// Notices for the person about damage and repairs, naming the file and line.
    pub fn notices(&self, path: &Path) -> Vec<String> {
        let damaged = self
            .damaged
            .iter()
            .map(|(line, why)| format!("{}:{line}: skipped a damaged record ({why})", path.display()));
        let repairs = self.repairs.iter().map(|what| format!("{}: {what}", path.display()));
        damaged.chain(repairs).collect()
    }
}

/// Why a line of a session file was skipped.
fn damage_reason(line: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(line) else {
        return "invalid UTF-8".to_owned();
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(e) if e.is_eof() => "a cut line".to_owned(),
        Err(e) => format!("not JSON: {e}"),
        Ok(value) => match value.get("type").and_then(|t| t.as_str()) {
            Some(kind) => match serde_json::from_value::<Record>(value.clone()) {
                Err(e) if e.to_string().contains("unknown variant") => format!("unknown record `{kind}`"),
                Err(e) => format!("a bad `{kind}` record: {e}"),
                Ok(_) => "unreadable".to_owned(),
            },
            None => "a record without a type".to_owned(),
        },
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Prefixes an I/O error with the path it concerns, keeping its kind (a bare "Permission
/// denied" does not say what to fix).
pub fn at_path(path: &Path) -> impl FnOnce(std::io::Error) -> std::io::Error + '_ {
    move |e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Applies records in order (see [`replay_bytes`]).
pub fn replay(text: &str) -> Loaded {
    replay_bytes(text.as_bytes())
}

/// Applies records in order. A damaged line anywhere (cut, invalid UTF-8, an unknown record)
/// is skipped and listed in [`Loaded::damaged`]; the conversation is then repaired so every
/// tool call has exactly one result right after it.
pub fn replay_bytes(bytes: &[u8]) -> Loaded {
    let mut loaded = Loaded::default();
    for (number, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = std::str::from_utf8(line)
            .ok()
            .and_then(|text| serde_json::from_str::<Record>(text).ok());
        let Some(record) = record else {
            loaded.damaged.push((number + 1, damage_reason(line)));
            continue;
        };
        apply_record(&mut loaded, record);
    }
    loaded.repairs = repair_calls(&mut loaded.history);
    loaded
}

fn apply_record(loaded: &mut Loaded, record: Record) {
    // The newest turn of a number wins (files written by two processes at once may repeat one).
    let find = |turns: &mut Vec<Turn>, turn: u32| turns.iter().rposition(|t| t.turn == turn);
    let tools_only = matches!(record, Record::ToolsTurn { .. });
    match record {
        Record::Meta { .. } => {}
        Record::Message { message } => {
            loaded.full_history.push(message.clone());
            loaded.history.push(message);
        }
        Record::Todos { todos } => loaded.todos = todos,
        Record::Checkpoint {
            turn,
            manifest,
            history_len,
            prompt,
            at_ms,
        }
        | Record::ToolsTurn {
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
            tools_only,
            ..Turn::default()
        }),
        Record::TurnEnd {
            turn,
            manifest,
            skipped,
            held,
            tools_start,
        } => {
            if let Some(i) = find(&mut loaded.turns, turn) {
                loaded.turns[i].end = Some(manifest);
                loaded.turns[i].skipped = skipped;
                loaded.turns[i].held = held;
                if let Some((start, created)) = tools_start.filter(|_| loaded.turns[i].tools_only) {
                    loaded.turns[i].start = start;
                    loaded.turns[i].created = created;
                }
            }
        }
        // Only ever of a turn over the budget (anything else would read a few paths as the
        // whole tree).
        Record::Touched { turn, start, created } => {
            if let Some(i) = find(&mut loaded.turns, turn).filter(|i| loaded.turns[*i].tools_only) {
                loaded.turns[i].start = start;
                loaded.turns[i].created = created;
            }
        }
        Record::Undo { turn, rewound, left } => {
            if let Some(i) = find(&mut loaded.turns, turn) {
                let (number, history_len) = (loaded.turns[i].turn, loaded.turns[i].history_len);
                if rewound {
                    uncompact_for_undo(
                        &mut loaded.history,
                        &loaded.full_history,
                        &loaded.compacted_in,
                        number,
                        history_len,
                    );
                }
                let t = &mut loaded.turns[i];
                t.undone = true;
                t.left = left;
                if rewound && t.history_len <= loaded.history.len() {
                    t.stash = loaded.history.split_off(t.history_len);
                    loaded.full_history = loaded.history.clone();
                    loaded.compacted_in.retain(|c| *c < number);
                }
            }
        }
        Record::Redo { turn } => {
            if let Some(i) = find(&mut loaded.turns, turn) {
                let t = &mut loaded.turns[i];
                t.undone = false;
                t.left.clear();
                if !t.stash.is_empty() {
                    loaded.history.append(&mut t.stash);
                    loaded.full_history = loaded.history.clone();
                }
            }
        }
        Record::Clear => {
            loaded.history.clear();
            loaded.full_history.clear();
            loaded.compacted_in.clear();
        }
        Record::Timing { call_id, duration_ms } => {
            loaded.outcomes.entry(call_id).or_default().duration_ms = duration_ms;
        }
        Record::Compaction { history } => {
            let turn = loaded.turns.last().map_or(0, |t| t.turn);
            loaded.compacted_in.push(turn);
            loaded.history = history;
        }
        Record::ToolResult { result } => {
            let outcome = crate::protocol::CallOutcome {
                duration_ms: result.duration_ms,
                failure: result.failure,
            };
            loaded.outcomes.insert(result.call_id.clone(), outcome);
            let message = Message::Tool {
                call_id: result.call_id,
                name: result.name,
                content: result.content,
                is_error: result.is_error,
                images: result.images,
            };
            loaded.full_history.push(message.clone());
            loaded.history.push(message);
        }
    }
}

/// What a call without a result is given, so the next request is valid.
const INTERRUPTED: &str = "Error: Interrupted: brute stopped before this call finished";

/// Makes the conversation one a provider accepts: every assistant message with tool calls is
/// followed by exactly one result per call, in call order (results are recorded as they
/// finish); a call without a result gets an "interrupted" one, and a result without its call
/// (its assistant message was damaged) or a second result for a call is dropped. Returns what
/// was repaired, for a notice; a call cut short by a crash in the last turn is not news.
pub fn repair_calls(history: &mut Vec<Message>) -> Vec<String> {
    let mut notes = Vec::new();
    let last_assistant = history.iter().rposition(|m| matches!(m, Message::Assistant { .. }));
    let old = std::mem::take(history);
    let mut messages = old.into_iter().enumerate().peekable();
    while let Some((index, message)) = messages.next() {
        let calls: Vec<(String, String)> = match &message {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| (c.id.clone(), c.name.clone())).collect()
            }
            Message::Tool { call_id, .. } => {
                notes.push(format!(
                    "dropped the result of call {call_id}: its tool call is missing"
                ));
                continue;
            }
            _ => Vec::new(),
        };
        history.push(message);
        if calls.is_empty() {
            continue;
        }
        let mut results: Vec<Option<Message>> = vec![None; calls.len()];
        while let Some((_, Message::Tool { .. })) = messages.peek() {
            let Some((_, result)) = messages.next() else { break };
            let Message::Tool { call_id, .. } = &result else {
                continue;
            };
            match calls.iter().position(|(id, _)| id == call_id) {
                Some(i) if results[i].is_none() => results[i] = Some(result),
                Some(_) => notes.push(format!("dropped a second result of call {call_id}")),
                None => notes.push(format!(
                    "dropped the result of call {call_id}: its tool call is missing"
                )),
            }
        }
        for ((call_id, name), result) in calls.into_iter().zip(results) {
            let result = result.unwrap_or_else(|| {
                if Some(index) != last_assistant {
                    notes.push(format!(
                        "call {call_id} ({name}) had no result; it is marked interrupted"
                    ));
                }
                Message::Tool {
                    call_id,
                    name,
                    content: INTERRUPTED.to_owned(),
                    is_error: true,
                    images: Vec::new(),
                }
            });
            history.push(result);
        }
    }
    notes
}

/// An open session file, appended to as things happen.
pub struct SessionFile {
    pub id: String,
    path: PathBuf,
    file: std::fs::File,
    /// The file's length after the last whole record.
    len: u64,
}

impl SessionFile {
    /// Appends one record in a single write, then flushes it to the OS. A write cut short (a
    /// full disk, an I/O error) is taken back, so the next record starts on a line of its own
    /// rather than joining a cut one (and being lost with it).
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        if let Err(error) = self.file.write_all(&line).and_then(|()| self.file.flush()) {
            let _ = self.file.set_len(self.len);
            return Err(at_path(&self.path)(error));
        }
        self.len += line.len() as u64;
        Ok(())
    }

    /// Makes what was appended durable against power loss, now (undo and redo).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data().map_err(at_path(&self.path))
    }

    /// Makes what was appended durable against power loss off the critical path (turn
    /// ends): every record is already with the kernel, so a killed brute loses nothing; a
    /// process that exits first leaves the flush to the kernel.
    pub fn sync_later(&self) {
        let path = self.path.clone();
        // A file opened anew, not this one's duplicate: a duplicate would share (and keep, until
        // the sync ends) the lock that makes this process the session's one writer.
        std::thread::spawn(move || {
            if let Err(error) = std::fs::File::open(&path).and_then(|file| file.sync_data()) {
                tracing::warn!(%error, "cannot sync {}", path.display());
            }
        });
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
    data_dir: PathBuf,
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
            data_dir: data_dir.to_path_buf(),
            dir: data_dir.join("sessions").join(project_key(root)),
            root: root.to_path_buf(),
            // `git:` ids of this project's checkpoints are read from its own repository.
            objects: ObjectStore::new(data_dir.join("objects")).with_git(root),
        }
    }

    /// The brute turns running in this project (see [`activity`]).
    pub fn activity(&self) -> activity::Activity {
        activity::Activity::new(&self.dir)
    }

    /// The data directory this store lives in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
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

    /// `id` as a session file of this store may be named: letters, digits, `-` and `_` only,
    /// so an id from a protocol peer (`session/load`) cannot lead outside the store.
    fn checked(id: &str) -> std::io::Result<&str> {
        let ok = !id.is_empty()
            && id.len() <= 128
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        match ok {
            true => Ok(id),
            false => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{}` is not a session id", crate::sanitize::visible(id)),
            )),
        }
    }

    /// Starts a new session file.
    pub fn create(&self) -> std::io::Result<SessionFile> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(&self.dir).map_err(at_path(&self.dir))?;
        let id = format!("{}-{:04x}", now_ms(), fastrand::u16(..));
        let path = self.path(&id);
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(at_path(&path))?;
        lock_writer(&file, &id, &path)?;
        let mut session = SessionFile { id, path, file, len: 0 };
        session.append(&Record::Meta {
            version: 1,
            root: self.root.display().to_string(),
            created_ms: now_ms(),
        })?;
        Ok(session)
    }

    /// Reads a session without opening it for writing (works on a read-only data dir).
    pub fn load(&self, id: &str) -> std::io::Result<Loaded> {
        let path = self.path(Self::checked(id)?);
        let bytes = std::fs::read(&path).map_err(at_path(&path))?;
        Ok(replay_bytes(&bytes))
    }

    /// Where the session `id` is stored.
    pub fn file_path(&self, id: &str) -> PathBuf {
        self.path(id)
    }

    /// Opens a session to continue it: its contents and the file to append to.
    pub fn open(&self, id: &str) -> std::io::Result<(SessionFile, Loaded)> {
        let path = self.path(Self::checked(id)?);
        let bytes = std::fs::read(&path).map_err(at_path(&path))?;
        let loaded = replay_bytes(&bytes);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(at_path(&path))?;
        lock_writer(&file, id, &path)?;
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            // A crash cut the last line: end it so the next record starts cleanly.
            file.write_all(b"\n").map_err(at_path(&path))?;
        }
        let len = file.metadata().map_err(at_path(&path))?.len();
        Ok((
            SessionFile {
                id: id.to_owned(),
                path,
                file,
                len,
            },
            loaded,
        ))
    }

    /// A new session that continues `loaded`'s conversation (for a second process opening a
    /// session another one writes): its own id, none of the other's checkpoints, so its undo
    /// never takes back the other session's turns.
    pub fn fork(&self, loaded: &Loaded) -> std::io::Result<(SessionFile, Loaded)> {
        let mut file = self.create()?;
        for message in &loaded.history {
            file.append(&Record::Message {
                message: message.clone(),
            })?;
        }
        if !loaded.todos.is_empty() {
            file.append(&Record::Todos {
                todos: loaded.todos.clone(),
            })?;
        }
        let forked = Loaded {
            history: loaded.history.clone(),
            todos: loaded.todos.clone(),
            outcomes: loaded.outcomes.clone(),
            ..Loaded::default()
        };
        Ok((file, forked))
    }

    /// Session ids, newest made first, from their names alone (an id starts with the time it
    /// was made): one listing of the directory, however many sessions a fleet of `brute -p` runs
    /// left in it, where [`SessionStore::ids`] looks at every file.
    pub fn ids_by_creation(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        // Regular files only (the listing's own types, no stat): a FIFO or a link put there is
        // never opened, so it cannot block a start or lead a read out of the data dir.
        let mut ids: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".jsonl")?.to_owned()))
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids
    }

    /// Session ids, newest (last written) first: regular files only, as in
    /// [`SessionStore::ids_by_creation`] (`--continue` never opens a FIFO or follows a link).
    pub fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<(SystemTime, String)> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let id = e.file_name().to_str()?.strip_suffix(".jsonl")?.to_owned();
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
                // A damaged byte must not hide the session from the picker.
                let bytes = std::fs::read(&path).ok()?;
                let text = String::from_utf8_lossy(&bytes);
                // Cheap on big sessions: count message records without parsing them, and parse
                // only until the first prompt.
                let messages = text.matches("{\"type\":\"message\"").count();
                let first_prompt = text
                    .lines()
                    .filter(|l| l.starts_with("{\"type\":\"message\""))
                    .find_map(|l| match serde_json::from_str::<Record>(l) {
                        Ok(Record::Message {
                            message: Message::User { text, .. },
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

/// Makes this process the only writer of a session file: an exclusive `flock` held as long as
/// the file is open. A second writer gets [`std::io::ErrorKind::WouldBlock`] with a message.
fn lock_writer(file: &std::fs::File, id: &str, path: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor borrowed for the call; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            format!("session {id} is in use by another brute process ({})", path.display()),
        ));
    }
    Err(at_path(path)(error))
}

/// Formats milliseconds since the epoch in local time with the zone, `YYYY-MM-DD HH:MM CET`
/// (session lists, `/resume`, undo lists): a person reads times in their own zone. The zone
/// comes from the C library (`TZ`, else `/etc/localtime`), which already sits under every
/// process: no date crate to build. Without zone data the time shows in UTC, saying so.
pub fn format_time(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    let (offset, zone) = local_zone(secs).unwrap_or((0, "UTC".to_owned()));
    format_time_at(ms, offset, &zone)
}

/// Formats milliseconds since the epoch for a zone `offset_secs` east of UTC named `zone`.
pub fn format_time_at(ms: u64, offset_secs: i64, zone: &str) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX).saturating_add(offset_secs);
    let (y, m, d) = crate::dates::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let zone = if zone.is_empty() { "UTC" } else { zone };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} {zone}", rem / 3600, (rem % 3600) / 60)
}

/// The local zone's offset (seconds east of UTC) and abbreviation at `secs`.
#[cfg(unix)]
fn local_zone(secs: i64) -> Option<(i64, String)> {
    let time = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is plain data, zeroed is a valid value; `localtime_r` writes only into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call (glibc and musl read `TZ` and the zone
    // files on first use).
    let ok = unsafe { !libc::localtime_r(&time, &mut tm).is_null() };
    if !ok {
        return None;
    }
    let zone = if tm.tm_zone.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null `tm_zone` points at a NUL-terminated abbreviation owned by libc.
        unsafe { std::ffi::CStr::from_ptr(tm.tm_zone) }
            .to_string_lossy()
            .into_owned()
    };
    #[allow(clippy::useless_conversion)] // `c_long` is 32 bits on 32-bit targets
    let offset = i64::from(tm.tm_gmtoff);
    Some((offset, zone))
}

#[cfg(not(unix))]
fn local_zone(_secs: i64) -> Option<(i64, String)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    #[test]
    fn a_cut_last_line_and_dangling_calls_are_handled() {
        let call = ToolCall::new("c1", "shell", "{}");
        let records = [
            Record::Message {
                message: Message::user("hi"),
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
            message: Message::user(t),
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
                held: Default::default(),
                tools_start: None,
            },
            Record::Undo {
                turn: 1,
                rewound: true,
                left: Vec::new(),
            },
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
        assert_eq!(format_time_at(0, 0, "UTC"), "1970-01-01 00:00 UTC");
        assert_eq!(format_time_at(90_000, 3600, "CET"), "1970-01-01 01:01 CET");
        assert_eq!(format_time_at(0, -5 * 3600, "EST"), "1969-12-31 19:00 EST");
        assert_eq!(format_time_at(0, 0, ""), "1970-01-01 00:00 UTC");
        // The local form always names its zone.
        let local = format_time(1_700_000_000_000);
        assert!(local.len() > "2023-11-14 22:13 ".len(), "{local}");
    }

    /// A checkpoint that fails on a full disk or an I/O error loses nothing the file watcher
    /// saw: the next one, once writes succeed, has the change (the watcher's list of touched
    /// paths was taken by the failed walk).
    #[test]
    fn a_failed_checkpoint_loses_nothing_the_watcher_saw() {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("a.txt"), "one").unwrap();
        let objects = ObjectStore::new(data.path().join("objects"));
        let mut scanner = checkpoint::Scanner::new(project.path().to_path_buf(), objects.clone(), 1 << 20);
        scanner.watch().expect("inotify is needed for this test");
        scanner.checkpoint().unwrap();
        std::fs::write(project.path().join("a.txt"), "two, not stored yet").unwrap();
        objects.fail_writes_after(Some(0));
        let error = scanner.checkpoint().unwrap_err();
        assert!(error.to_string().contains("Input/output error"), "{error}");
        objects.fail_writes_after(None);
        let (id, _) = scanner.checkpoint().unwrap();
        let manifest = checkpoint::load_manifest(&objects, &id).unwrap();
        assert_eq!(
            objects.get(&manifest["a.txt"].id.to_string()).unwrap(),
            b"two, not stored yet"
        );
    }
}
