//! The project's files for `@` completion: listed off the UI thread (and listed again when the
//! popup opens and the list is stale, so files the model just wrote show up), ranked by
//! `nucleo-matcher` (the fuzzy matcher of helix and television). Typing more of a query only
//! re-scores the previous query's hits, so a keystroke stays cheap at 100,000 files.
//!
//! Over many candidates (the first keys of a query in a big tree) the matcher's greedy
//! O(n) scoring is used, as fzf does with its v1 algorithm for large inputs: its scores can be
//! lower than the best alignment's for a few paths, and a query that matches that many
//! files ranks them loosely anyway. Once the candidates shrink below [`OPTIMAL_BELOW`] every
//! path is scored by its best alignment. The list is kept sorted, so ties break on integers
//! (score, length, position) instead of comparing strings.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Files listed, at most.
pub const MAX_FILES: usize = 200_000;
/// Below this many candidates each path is scored by its best alignment (about 0.3 µs a path);
/// above it, greedily (about 0.04 µs).
pub const OPTIMAL_BELOW: usize = 10_000;
/// A listing older than this is refreshed when the `@` popup opens.
const STALE: Duration = Duration::from_secs(2);

/// The files offered for `@path` completion.
pub struct FileIndex {
    root: Option<PathBuf>,
    files: Vec<String>,
    listed_at: Option<Instant>,
    pending: Option<mpsc::Receiver<Vec<String>>>,
    matcher: Matcher,
    /// Queries typed since the popup's query was last shortened past them, each extending the
    /// one before: the files each matched and the best ones, so typing more re-scores only the
    /// previous hits and Backspace returns to a cached answer.
    cache: Vec<Cached>,
}

struct Cached {
    query: String,
    hits: Vec<u32>,
    limit: usize,
    best: Vec<String>,
}

impl FileIndex {
    /// A fixed list (tests, benchmarks).
    pub fn new(mut files: Vec<String>) -> Self {
        files.sort_unstable();
        Self {
            root: None,
            files,
            listed_at: None,
            pending: None,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            cache: Vec::new(),
        }
    }

    /// The files under `root` (respecting .gitignore), listed in the background.
    pub fn scan(root: &Path) -> Self {
        let mut index = Self::new(Vec::new());
        index.root = Some(root.to_path_buf());
        index.start_listing();
        index
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn start_listing(&mut self) {
        let Some(root) = self.root.clone() else { return };
        if self.pending.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("brute-files".into()).spawn(move || {
            let mut files = list_files(&root);
            files.sort_unstable();
            let _ = tx.send(files);
        });
        if spawned.is_ok() {
            self.pending = Some(rx);
            self.listed_at = Some(Instant::now());
        }
    }

    /// Lists the files again if the last listing is stale (called when the `@` popup opens).
    pub fn refresh_if_stale(&mut self) {
        if self.listed_at.is_none_or(|at| at.elapsed() >= STALE) {
            self.start_listing();
        }
    }

    /// Takes a finished listing, if any; true when the list changed.
    pub fn poll(&mut self) -> bool {
        let Some(rx) = &self.pending else { return false };
        match rx.try_recv() {
            Ok(files) => self.replace(files),
            Err(mpsc::TryRecvError::Empty) => false,
            Err(mpsc::TryRecvError::Disconnected) => {
                self.pending = None;
                false
            }
        }
    }

    /// Waits for a listing under way (tests).
    pub fn wait(&mut self) -> bool {
        match self.pending.take().map(|rx| rx.recv()) {
            Some(Ok(files)) => self.replace(files),
            _ => false,
        }
    }

    /// Marks the listing stale, so the next popup lists again (tests).
    pub fn mark_stale(&mut self) {
        self.listed_at = None;
    }

    fn replace(&mut self, files: Vec<String>) -> bool {
        self.pending = None;
        let changed = files != self.files;
        self.files = files;
        self.cache.clear();
        changed
    }

    /// The best `limit` files for `query`: by the matcher's score, then shorter paths first.
    pub fn matches(&mut self, query: &str, limit: usize) -> Vec<String> {
        if query.is_empty() {
            let mut all: Vec<u32> = (0..self.files.len() as u32).collect();
            let files = &self.files;
            return top(&mut all, limit, |&i| (files[i as usize].len(), i))
                .into_iter()
                .map(|&i| files[i as usize].clone())
                .collect();
        }
        while self.cache.last().is_some_and(|c| !query.starts_with(&c.query)) {
            self.cache.pop();
        }
        if let Some(cached) = self.cache.last()
            && cached.query == query
            && cached.limit == limit
        {
            return cached.best.clone();
        }
        let atom = Atom::new(query, CaseMatching::Smart, Normalization::Smart, AtomKind::Fuzzy, false);
        // A query that extends an earlier one can only match a subset of its hits.
        let candidates: Vec<u32> = match self.cache.last() {
            Some(cached) => cached.hits.clone(),
            None => (0..self.files.len() as u32).collect(),
        };
        let mut buf = Vec::new();
        let mut hits = Vec::new();
        let mut scored: Vec<(u16, u32)> = Vec::new();
        let greedy = candidates.len() >= OPTIMAL_BELOW;
        if greedy {
            // Scoring once sets the matcher's case and normalization to the atom's.
            let _ = atom.score(Utf32Str::Ascii(b""), &mut self.matcher);
        }
        for i in candidates {
            let Some(file) = self.files.get(i as usize) else {
                continue;
            };
            let haystack = Utf32Str::new(file, &mut buf);
            let score = if greedy {
                self.matcher.fuzzy_match_greedy(haystack, atom.needle_text())
            } else {
                atom.score(haystack, &mut self.matcher)
            };
            if let Some(score) = score {
                hits.push(i);
                scored.push((score, i));
            }
        }
        let files = &self.files;
        let best: Vec<String> = top(&mut scored, limit, |&(score, i)| {
            (u16::MAX - score, files[i as usize].len(), i)
        })
        .into_iter()
        .map(|&(_, i)| files[i as usize].clone())
        .collect();
        if self.cache.last().is_some_and(|c| c.query == query) {
            self.cache.pop();
        }
        self.cache.push(Cached {
            query: query.to_owned(),
            hits,
            limit,
            best: best.clone(),
        });
        best
    }
}

/// The `limit` smallest items by `key`, in order (a selection, then a sort of only those).
fn top<T, K: Ord>(items: &mut [T], limit: usize, key: impl Fn(&T) -> K) -> Vec<&T> {
    if limit == 0 || items.is_empty() {
        return Vec::new();
    }
    if items.len() > limit {
        items.select_nth_unstable_by(limit - 1, |a, b| key(a).cmp(&key(b)));
    }
    let len = items.len().min(limit);
    let best = &mut items[..len];
    // The key may borrow from the item, which `sort_by_key` does not allow.
    #[allow(clippy::unnecessary_sort_by)]
    best.sort_by(|a, b| key(a).cmp(&key(b)));
    best.iter().collect()
}

/// Project files (respecting .gitignore), relative to `root`.
pub fn list_files(root: &Path) -> Vec<String> {
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.path().strip_prefix(root).ok().map(|p| p.display().to_string()))
        .take(MAX_FILES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_fuzzy_matches_and_narrows_as_the_query_grows() {
        let files: Vec<String> = [
            "docs/composer-notes.md",
            "src/tui/composer.rs",
            "src/tui/app.rs",
            "tests/compose.rs",
            "src/config/mod.rs",
        ]
        .map(String::from)
        .to_vec();
        let mut index = FileIndex::new(files);
        let mut best = index.matches("composer", 2);
        best.sort();
        assert_eq!(best, ["docs/composer-notes.md", "src/tui/composer.rs"]);
        assert_eq!(index.matches("tuiapp", 5), ["src/tui/app.rs"]);
        // Narrowing from "co" to "cfg" is not an extension: everything is scored again.
        let co = index.matches("co", 10);
        assert!(co.len() >= 4, "{co:?}");
        assert_eq!(
            index.matches("cmod", 10).first().map(String::as_str),
            Some("src/config/mod.rs")
        );
        // Typing on and deleting back gives the same answers (the second from the cache).
        assert_eq!(index.matches("c", 10).len(), 5);
        assert_eq!(index.matches("co", 10), co);
        assert_eq!(index.matches("", 2).len(), 2);
        assert!(index.matches("zzz", 10).is_empty());
    }

    #[test]
    fn many_candidates_are_scored_greedily_and_agree_on_what_matches() {
        // Enough paths that the first keys take the greedy path, then the optimal one.
        let mut files: Vec<String> = (0..OPTIMAL_BELOW * 2)
            .map(|i| format!("src/module_{}/file_{i}.rs", i % 50))
            .collect();
        files.push("docs/Composer.md".to_owned());
        files.push("src/tui/composer.rs".to_owned());
        let mut index = FileIndex::new(files.clone());
        // Greedy or not, the set of matches is the fuzzy (subsequence) set.
        let greedy = index.matches("file_1", usize::MAX);
        let subsequence = |q: &str, f: &str| {
            let mut q = q.chars().peekable();
            for c in f.chars() {
                if q.peek().is_some_and(|&n| n.eq_ignore_ascii_case(&c)) {
                    q.next();
                }
            }
            q.peek().is_none()
        };
        let expected = files.iter().filter(|f| subsequence("file_1", f)).count();
        assert_eq!(greedy.len(), expected);
        // A query that narrows to a few files is ranked by the best alignment.
        assert_eq!(index.matches("tuicomposer", 5), ["src/tui/composer.rs"]);
        // Smart case holds on the greedy path too: an upper-case letter must match exactly.
        let mut fresh = FileIndex::new(files);
        assert_eq!(fresh.matches("C", usize::MAX), ["docs/Composer.md"]);
        // Ties break shorter first, then in path order.
        let best = fresh.matches("s", 3);
        assert_eq!(
            best,
            [
                "src/tui/composer.rs",
                "src/module_0/file_0.rs",
                "src/module_1/file_1.rs"
            ]
        );
    }

    #[test]
    fn a_stale_list_is_refreshed_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.rs"), "").unwrap();
        let mut index = FileIndex::scan(dir.path());
        assert!(index.wait());
        assert_eq!(index.matches("old", 10), ["old.rs"]);
        std::fs::write(dir.path().join("new.rs"), "").unwrap();
        index.refresh_if_stale();
        assert!(index.pending.is_none(), "a fresh list is not listed again");
        index.mark_stale();
        index.refresh_if_stale();
        assert!(index.wait());
        assert_eq!(index.matches("new", 10), ["new.rs"]);
    }
}
