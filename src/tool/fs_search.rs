//! `fs_search`: content search in-process, like ripgrep: the `ignore` walker (respecting
//! .gitignore, skipping hidden files) in parallel, the grep crates for matching and binary
//! detection. With only a glob, it lists matching files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use ignore::{WalkBuilder, WalkState, overrides::OverrideBuilder};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput};

/// Matches (or files) shown at most; the rest are counted.
pub const MAX_RESULTS: usize = 100;
/// Matched lines are cut to this many characters in results.
const MAX_MATCH_CHARS: usize = 500;
/// The largest compiled regex accepted (the regex crate's own default; grep-regex allows 100 MB,
/// which takes seconds to build for a pattern like `(\w{100}){100}`).
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;
/// Lazy DFA cache per search thread; when a pattern needs more, the engine falls back to a
/// slower but steady one instead of growing (grep-regex's default is 1 GB per thread).
const DFA_CACHE_BYTES: usize = 10 << 20;

/// The built-in `fs_search` tool.
pub struct SearchTool;

impl Tool for SearchTool {
    fn name(&self) -> &str {
        "fs_search"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax), respecting .gitignore and skipping hidden and binary files. Returns `path:line:text`, newest files first, at most 100 matches. With only `glob`, lists matching files."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("pattern", "Regular expression to search for", false)
            .string("path", "File or directory to search (default: project root)", false)
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
                root: ctx.root.clone(),
            };
            let cancel = ctx.cancel.clone();
            let content = tokio::task::spawn_blocking(move || search(&query, &cancel))
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

struct FileHits {
    path: PathBuf,
    modified: SystemTime,
    lines: Vec<(u64, String)>,
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

/// Runs a query synchronously (the tool calls it on a blocking thread).
pub fn search(query: &Query, cancel: &CancellationToken) -> Result<String, ToolError> {
    match &query.pattern {
        Some(pattern) => grep(query, pattern, cancel),
        None if query.glob.is_some() => list_files(query, cancel),
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

fn grep(query: &Query, pattern: &str, cancel: &CancellationToken) -> Result<String, ToolError> {
    let matcher = matcher(query, pattern)?;
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    walker(query)?.build_parallel().run(|| {
        let matcher = matcher.clone();
        let hits = &hits;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .build();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut lines = Vec::new();
            let result = searcher.search_path(
                &matcher,
                entry.path(),
                UTF8(|number, text| {
                    let text = text.trim_end_matches(['\n', '\r']);
                    let text = match text.char_indices().nth(MAX_MATCH_CHARS) {
                        Some((cut, _)) => format!("{}…", &text[..cut]),
                        None => text.to_owned(),
                    };
                    lines.push((number, text));
                    Ok(true)
                }),
            );
            if result.is_ok() && !lines.is_empty() {
                let found = FileHits {
                    path: entry.path().to_path_buf(),
                    modified: modified(entry.path()),
                    lines,
                };
                hits.lock().unwrap_or_else(|e| e.into_inner()).push(found);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::new("Interrupted", "the search was interrupted"));
    }
    let mut hits = hits.into_inner().unwrap_or_else(|e| e.into_inner());
    hits.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    let total: usize = hits.iter().map(|h| h.lines.len()).sum();
    if total == 0 {
        return Ok(format!("No matches for `{pattern}` in {}.", describe_scope(query)));
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
    if total > MAX_RESULTS {
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

fn list_files(query: &Query, cancel: &CancellationToken) -> Result<String, ToolError> {
    let files: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    walker(query)?.build_parallel().run(|| {
        let files = &files;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
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
    let mut files = files.into_inner().unwrap_or_else(|e| e.into_inner());
    if files.is_empty() {
        return Ok(format!("No files match in {}.", describe_scope(query)));
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out: String = files
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, p)| format!("{}\n", shown(&query.root, p)))
        .collect();
    if files.len() > MAX_RESULTS {
        out.push_str(&format!(
            "\n(Showing {MAX_RESULTS} of {} files. Narrow the path or glob to see the rest.)\n",
            files.len()
        ));
    }
    Ok(out)
}
