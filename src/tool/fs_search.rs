//! `fs_search`: content search in-process, like ripgrep: the `ignore` walker (respecting
//! .gitignore, skipping hidden files) in parallel, the grep crates for matching and binary
//! detection. With only a glob, it lists matching files.
//!
//! A pattern is hostile input: some patterns make the regex engine slow on some text (e.g.
//! `[01]*1[01]{20}2` over random bits keeps the lazy DFA rebuilding its states; a Unicode
//! `\b` between big counted repetitions forces the slow engine). So a search has a time
//! budget ([`DEFAULT_BUDGET`]) after which it stops and reports what it found so far, and both
//! the budget and the interrupt are checked between files, on every read inside a file
//! (about 64 KB) and on every match. Lines longer than [`MAX_LINE_BYTES`] are searched in
//! pieces of that size, so no single step of the regex engine sees more than about that much
//! (a match spanning two pieces is missed, a small price on lines that long).
//! Regexes whose compiled form is over [`REGEX_SIZE_LIMIT`] are refused with a hint.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures_util::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{WalkBuilder, WalkState, overrides::OverrideBuilder};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput};

/// Matches (or files) shown at most; the rest are counted.
pub const MAX_RESULTS: usize = 100;
/// Matched lines are cut to this many characters in results.
const MAX_MATCH_CHARS: usize = 500;
/// How long one search may take before it stops with what it found.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(20);
/// The largest compiled regex accepted (the regex crate's own default; grep-regex allows 100 MB,
/// which takes seconds to build for a pattern like `(\w{100}){100}`).
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;
/// Lazy DFA cache per search thread; when a pattern needs more, the engine falls back to a
/// slower but steady one instead of growing (grep-regex's default is 1 GB per thread).
const DFA_CACHE_BYTES: usize = 10 << 20;
/// Longer lines are searched in pieces of this size (see the module comment).
pub const MAX_LINE_BYTES: usize = 256 << 10;

/// The built-in `fs_search` tool.
pub struct SearchTool {
    budget: Duration,
}

impl Default for SearchTool {
    fn default() -> Self {
        Self::with_budget(DEFAULT_BUDGET)
    }
}

impl SearchTool {
    /// A search tool whose searches each get `budget` (tests use a short one).
    pub fn with_budget(budget: Duration) -> Self {
        Self { budget }
    }
}

impl Tool for SearchTool {
    fn name(&self) -> &str {
        "fs_search"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("path")
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax), respecting .gitignore and skipping hidden and binary files. Returns `path:line:text`, newest files first, at most 100 matches. With only `glob`, lists matching files."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("pattern", "Regular expression to search for", false)
            .string(
                "path",
                "File or directory to search (default: the working directory)",
                false,
            )
            .string(
                "glob",
                "Only files matching this glob, e.g. `*.rs` or `*.{js,ts}`",
                false,
            )
            .boolean("ignore_case", "Case-insensitive search (default false)", false)
            .build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let query = Query {
                pattern: args["pattern"].as_str().filter(|p| !p.is_empty()).map(str::to_owned),
                glob: args["glob"].as_str().filter(|g| !g.is_empty()).map(str::to_owned),
                ignore_case: args["ignore_case"].as_bool().unwrap_or(false),
                path: ctx.resolve(args["path"].as_str().unwrap_or(".")),
                root: ctx.cwd.clone(),
            };
            let stop = Stop::new(ctx.cancel.clone(), self.budget);
            let content = tokio::task::spawn_blocking(move || search(&query, &stop))
                .await
                .map_err(|e| ToolError::new("Internal", e.to_string()))??;
            Ok(ToolOutput::text(content))
        })
    }
}

/// One search, as the tool received it.
#[derive(Debug, Clone)]
pub struct Query {
    pub pattern: Option<String>,
    pub glob: Option<String>,
    pub ignore_case: bool,
    /// Where to search.
    pub path: PathBuf,
    /// Paths are shown relative to this.
    pub root: PathBuf,
}

/// When a search must stop early: the person interrupts, or its time budget runs out.
#[derive(Debug, Clone)]
pub struct Stop {
    cancel: CancellationToken,
    /// `None`: a budget too large to count to.
    deadline: Option<Instant>,
    budget: Duration,
}

/// Why a search stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Halt {
    #[error("the search was interrupted")]
    Interrupted,
    #[error("the search ran out of its time budget")]
    OutOfTime,
}

impl Stop {
    /// Stops on `cancel`, or `budget` from now.
    pub fn new(cancel: CancellationToken, budget: Duration) -> Self {
        Self {
            cancel,
            deadline: Instant::now().checked_add(budget),
            budget,
        }
    }

    /// Whether to stop now, and why.
    pub fn check(&self) -> Result<(), Halt> {
        if self.cancel.is_cancelled() {
            Err(Halt::Interrupted)
        } else if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            Err(Halt::OutOfTime)
        } else {
            Ok(())
        }
    }

    fn interrupted(&self) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::new("Interrupted", "the search was interrupted"));
        }
        Ok(())
    }
}

struct FileHits {
    path: PathBuf,
    modified: SystemTime,
    /// The first [`MAX_RESULTS`] matching lines.
    lines: Vec<(u64, String)>,
    /// All matching lines.
    count: usize,
}

/// A file as the searcher reads it: every read first checks [`Stop`], and a line running past
/// [`MAX_LINE_BYTES`] gets a line break inserted (its position is recorded so line numbers can
/// be corrected).
struct Guarded<'a> {
    file: File,
    stop: &'a Stop,
    /// Bytes given out since the last line break.
    line: usize,
    /// Bytes given out so far, inserted breaks included.
    offset: u64,
    /// Offsets of the inserted breaks.
    breaks: Rc<RefCell<Vec<u64>>>,
    /// UTF-16 (byte order mark seen): a one-byte break would garble it, so none is inserted.
    wide: Option<bool>,
}

impl Read for Guarded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Err(halt) = self.stop.check() {
            return Err(io::Error::other(halt));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let split = self.wide != Some(true);
        if split && self.line >= MAX_LINE_BYTES {
            buf[0] = b'\n';
            self.breaks.borrow_mut().push(self.offset);
            self.offset += 1;
            self.line = 0;
            return Ok(1);
        }
        let room = if split {
            buf.len().min(MAX_LINE_BYTES - self.line)
        } else {
            buf.len()
        };
        let n = self.file.read(&mut buf[..room])?;
        let read = &buf[..n];
        if self.wide.is_none() && n > 0 {
            self.wide = Some(read.starts_with(b"\xFF\xFE") || read.starts_with(b"\xFE\xFF"));
        }
        self.line = match read.iter().rposition(|&b| b == b'\n') {
            Some(last) => n - last - 1,
            None => self.line + n,
        };
        self.offset += n as u64;
        Ok(n)
    }
}

/// Collects the matches of one file, stopping when [`Stop`] says so.
struct Collect<'a> {
    stop: &'a Stop,
    breaks: Rc<RefCell<Vec<u64>>>,
    lines: Vec<(u64, String)>,
    count: usize,
    stopped: bool,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.stop.check().is_err() {
            self.stopped = true;
            return Ok(false);
        }
        self.count += 1;
        if self.lines.len() < MAX_RESULTS {
            let start = found.absolute_byte_offset();
            let inserted = self.breaks.borrow().partition_point(|&b| b < start) as u64;
            let number = found.line_number().unwrap_or(0).saturating_sub(inserted);
            let text = String::from_utf8_lossy(found.bytes());
            let text = text.trim_end_matches(['\n', '\r']);
            let text = match text.char_indices().nth(MAX_MATCH_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text.to_owned(),
            };
            self.lines.push((number, text));
        }
        Ok(true)
    }
}

/// Searches one file: its matches (`None` when there are none or it cannot be read), and
/// whether [`Stop`] ended the search before the end of the file.
fn search_file(searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path, stop: &Stop) -> (Option<FileHits>, bool) {
    let Ok(file) = File::open(path) else {
        return (None, false);
    };
    let breaks = Rc::new(RefCell::new(Vec::new()));
    let reader = Guarded {
        file,
        stop,
        line: 0,
        offset: 0,
        breaks: breaks.clone(),
        wide: None,
    };
    let mut sink = Collect {
        stop,
        breaks,
        lines: Vec::new(),
        count: 0,
        stopped: false,
    };
    let result = searcher.search_reader(matcher, reader, &mut sink);
    // A stopped search keeps what it found; other errors (unreadable files) count as no match.
    let stopped = sink.stopped || (result.is_err() && stop.check().is_err());
    if sink.lines.is_empty() || (result.is_err() && !stopped) {
        return (None, stopped);
    }
    let hits = FileHits {
        path: path.to_path_buf(),
        modified: modified(path),
        lines: sink.lines,
        count: sink.count,
    };
    (Some(hits), stopped)
}

/// `1 match`, `2 matches`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn walker(query: &Query) -> Result<WalkBuilder, ToolError> {
    if !query.path.exists() {
        return Err(ToolError::not_found(format!(
            "path not found: {}",
            shown(&query.root, &query.path)
        )));
    }
    let mut builder = WalkBuilder::new(&query.path);
    builder.require_git(false).threads(num_threads());
    if let Some(glob) = &query.glob {
        let mut overrides = OverrideBuilder::new(&query.path);
        overrides
            .add(glob)
            .map_err(|e| ToolError::invalid(format!("bad glob `{glob}`: {e}")))?;
        let overrides = overrides
            .build()
            .map_err(|e| ToolError::invalid(format!("bad glob `{glob}`: {e}")))?;
        builder.overrides(overrides);
    }
    Ok(builder)
}

fn num_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(12))
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Runs a query synchronously (the tool calls it on a blocking thread), stopping early as
/// `stop` says: interrupted, it is an error; out of time, the result says so and shows what
/// was found.
pub fn search(query: &Query, stop: &Stop) -> Result<String, ToolError> {
    match &query.pattern {
        Some(pattern) => grep(query, pattern, stop),
        None if query.glob.is_some() => list_files(query, stop),
        None => Err(ToolError::invalid(
            "give a `pattern` to search for, or a `glob` to list files",
        )),
    }
}

fn matcher(query: &Query, pattern: &str) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(query.ignore_case)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_CACHE_BYTES)
        .build(pattern)
        .map_err(|e| {
            if e.to_string().contains("exceeds size limit") {
                ToolError::invalid(format!(
                    "the regex `{pattern}` is too big once compiled (over {} MB): counted repetitions multiply its size, \
                     and `\\w`, `\\d` and `.` stand for all of Unicode. Simplify it: smaller counts, `+` or `*` instead \
                     of `{{n}}`, ASCII classes like `[a-zA-Z0-9_]`, or a literal part of what you are looking for.",
                    REGEX_SIZE_LIMIT >> 20
                ))
            } else {
                ToolError::invalid(format!("invalid regex `{pattern}`: {e}"))
            }
        })
}

/// The line that says a search was cut by its budget.
fn budget_note(stop: &Stop, found: &str) -> String {
    format!(
        "(Stopped by the {:?} time budget: {found}. Narrow the path or glob, or simplify the pattern.)",
        stop.budget
    )
}

fn grep(query: &Query, pattern: &str, stop: &Stop) -> Result<String, ToolError> {
    let matcher = matcher(query, pattern)?;
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let cut = AtomicBool::new(false);
    walker(query)?.build_parallel().run(|| {
        let matcher = matcher.clone();
        let (hits, cut) = (&hits, &cut);
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .build();
        Box::new(move |entry| {
            if stop.check().is_err() {
                cut.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let (found, stopped) = search_file(&mut searcher, &matcher, entry.path(), stop);
            if let Some(found) = found {
                hits.lock().unwrap_or_else(|e| e.into_inner()).push(found);
            }
            if stopped {
                cut.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    stop.interrupted()?;
    let cut = cut.into_inner();
    let mut hits = hits.into_inner().unwrap_or_else(|e| e.into_inner());
    hits.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    let total: usize = hits.iter().map(|h| h.count).sum();
    if total == 0 {
        let mut out = format!("No matches for `{pattern}` in {}.", describe_scope(query));
        if cut {
            out.push_str(&format!(
                "\n{}",
                budget_note(stop, "nothing was found before it ran out")
            ));
        }
        return Ok(out);
    }
    let mut out = String::new();
    let flat = hits.iter().flat_map(|hit| {
        let name = shown(&query.root, &hit.path);
        hit.lines
            .iter()
            .map(move |(number, text)| format!("{name}:{number}:{text}\n"))
    });
    for line in flat.take(MAX_RESULTS) {
        out.push_str(&line);
    }
    if cut {
        let mut found = format!(
            "{} in {} found so far",
            counted(total, "match", "matches"),
            counted(hits.len(), "file", "files")
        );
        if total > MAX_RESULTS {
            found.push_str(&format!(", the first {MAX_RESULTS} shown"));
        }
        out.push_str(&format!("\n{}\n", budget_note(stop, &found)));
    } else if total > MAX_RESULTS {
        out.push_str(&format!(
            "\n(Showing {MAX_RESULTS} of {total} matches in {} files. Narrow the pattern, path or glob to see the rest.)\n",
            hits.len()
        ));
    }
    Ok(out)
}

fn describe_scope(query: &Query) -> String {
    let place = shown(&query.root, &query.path);
    let place = if place.is_empty() { ".".to_owned() } else { place };
    match &query.glob {
        Some(glob) => format!("{place} (files matching `{glob}`)"),
        None => place,
    }
}

fn list_files(query: &Query, stop: &Stop) -> Result<String, ToolError> {
    let files: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    let cut = AtomicBool::new(false);
    walker(query)?.build_parallel().run(|| {
        let (files, cut) = (&files, &cut);
        Box::new(move |entry| {
            if stop.check().is_err() {
                cut.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
            {
                let found = (modified(entry.path()), entry.path().to_path_buf());
                files.lock().unwrap_or_else(|e| e.into_inner()).push(found);
            }
            WalkState::Continue
        })
    });
    stop.interrupted()?;
    let cut = cut.into_inner();
    let mut files = files.into_inner().unwrap_or_else(|e| e.into_inner());
    if files.is_empty() {
        let mut out = format!("No files match in {}.", describe_scope(query));
        if cut {
            out.push_str(&format!(
                "\n{}",
                budget_note(stop, "nothing was found before it ran out")
            ));
        }
        return Ok(out);
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out: String = files
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, p)| format!("{}\n", shown(&query.root, p)))
        .collect();
    if cut {
        let mut found = format!("{} found so far", counted(files.len(), "file", "files"));
        if files.len() > MAX_RESULTS {
            found.push_str(&format!(", the first {MAX_RESULTS} shown"));
        }
        out.push_str(&format!("\n{}\n", budget_note(stop, &found)));
    } else if files.len() > MAX_RESULTS {
        out.push_str(&format!(
            "\n(Showing {MAX_RESULTS} of {} files. Narrow the path or glob to see the rest.)\n",
            files.len()
        ));
    }
    Ok(out)
}
