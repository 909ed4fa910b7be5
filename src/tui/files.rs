//! The project's files for `@` completion: listed off the UI thread (and listed again when the
//! popup opens and the list is stale, so files the model just wrote show up), ranked by
//! `nucleo-matcher` (the fuzzy matcher of helix and television). Typing more of a query only
//! re-scores the previous query's hits, so a keystroke stays cheap at 100,000 files.
//!
//! Over many candidates (the first keys of a query in a big tree) the matcher's greedy
//! O(n) scoring is used, as fzf does with its v1 algorithm for large inputs: its scores can be
//! lower than the best alignment's for a few paths, and a query that matches that many
//! files ranks them loosely anyway. Once the candidates shrink below [`OPTIMAL_BELOW`] every
//! path is scored by its best alignment. A greedy pass over very many candidates is split
//! over two threads (scoped, so nothing outlives the keystroke). The list is kept sorted, so ties break on integers
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
/// Above this many candidates a greedy pass is split over two threads.
const PARALLEL_ABOVE: usize = 20_000;
/// A listing older than this is refreshed when the `@` popup opens.
const STALE: Duration = Duration::from_secs(2);

/// The files offered for `@path` completion.
pub struct FileIndex {
    root: Option<PathBuf>,
    files: Vec<String>,
    /// Which ASCII letters, digits and path punctuation each file holds ([`char_mask`]): a
    /// file lacking a character of the query cannot match, and is skipped without scoring.
    masks: Vec<u64>,
    listed_at: Option<Instant>,
    pending: Option<mpsc::Receiver<Vec<String>>>,
    matcher: Matcher,
    /// A second matcher, for the other half of a large greedy pass (one per thread).
    second: Matcher,
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
            masks: files.iter().map(|f| file_mask(f)).collect(),
            root: None,
            files,
            listed_at: None,
            pending: None,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            second: Matcher::new(Config::DEFAULT.match_paths()),
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
        self.masks = files.iter().map(|f| file_mask(f)).collect();
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
        // A query that extends an earlier one can only match a subset of its hits, and only
        // files holding every character of the query can match at all.
        let needed = char_mask(query);
        let masks = &self.masks;
        let holds = |&i: &u32| masks.get(i as usize).is_some_and(|m| m & needed == needed);
        let candidates: Vec<u32> = match self.cache.last() {
            Some(cached) => cached.hits.iter().copied().filter(holds).collect(),
            None => (0..self.files.len() as u32).filter(holds).collect(),
        };
        let mut scored: Vec<(u16, u32)> = if candidates.len() < OPTIMAL_BELOW {
            let mut buf = Vec::new();
            candidates
                .iter()
                .filter_map(|&i| {
                    let file = self.files.get(i as usize)?;
                    atom.score(Utf32Str::new(file, &mut buf), &mut self.matcher)
                        .map(|score| (score, i))
                })
                .collect()
        } else {
            score_greedy_split(
                &self.files,
                &self.masks,
                &candidates,
                &atom,
                [&mut self.matcher, &mut self.second],
            )
        };
        let hits: Vec<u32> = scored.iter().map(|&(_, i)| i).collect();
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

/// One bit per ASCII letter (either case), digit and `.`, `_`, `-`, `/` that `text` holds.
/// Other characters set no bit, so a query with them is not narrowed by them.
fn char_mask(text: &str) -> u64 {
    text.bytes().fold(0, |mask, byte| {
        let bit = match byte.to_ascii_lowercase() {
            b @ b'a'..=b'z' => u32::from(b - b'a'),
            b @ b'0'..=b'9' => 26 + u32::from(b - b'0'),
            b'.' => 36,
            b'_' => 37,
            b'-' => 38,
            b'/' => 39,
            _ => return mask,
        };
        mask | 1 << bit
    })
}

/// A file's [`char_mask`]; a name with non-ASCII characters may match ASCII query letters
/// after normalization (`é` matches `e`), so it holds every bit.
fn file_mask(file: &str) -> u64 {
    if file.is_ascii() { char_mask(file) } else { u64::MAX }
}

/// Scores `candidates` greedily (see the module docs) for `atom`'s needle, half of them on a
/// second thread when there are enough to be worth one; `(score, index)` of the matches.
fn score_greedy_split(
    files: &[String],
    masks: &[u64],
    candidates: &[u32],
    atom: &Atom,
    [first, second]: [&mut Matcher; 2],
) -> Vec<(u16, u32)> {
    let score = |part: &[u32], matcher: &mut Matcher| -> Vec<(u16, u32)> {
        // Scoring once sets the matcher's case and normalization to the atom's.
        let _ = atom.score(Utf32Str::Ascii(b""), matcher);
        let needle = atom.needle_text();
        let mut buf = Vec::new();
        part.iter()
            .filter_map(|&i| {
                let file = files.get(i as usize)?;
                // An ASCII name (its mask is not all ones) needs no conversion check.
                let haystack = if masks.get(i as usize).is_some_and(|&m| m != u64::MAX) {
                    Utf32Str::Ascii(file.as_bytes())
                } else {
                    Utf32Str::new(file, &mut buf)
                };
                matcher.fuzzy_match_greedy(haystack, needle).map(|score| (score, i))
            })
            .collect()
    };
    if candidates.len() < PARALLEL_ABOVE {
        return score(candidates, first);
    }
    let (a, b) = candidates.split_at(candidates.len() / 2);
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new()
            .name("brute-match".into())
            .spawn_scoped(scope, || score(b, second));
        let mut scored = score(a, first);
        match other.map(|handle| handle.join()) {
            Ok(Ok(rest)) => scored.extend(rest),
            // No thread (or it panicked): this one does the other half too.
            _ => scored.extend(score(b, first)),
        }
        scored
    })
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
        // Enough paths that the first keys take the greedy path split over two threads, then
        // the optimal one.
        let mut files: Vec<String> = (0..PARALLEL_ABOVE)
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
        // A non-ASCII name is never skipped by the character masks: `e` matches `é`.
        let mut accents = FileIndex::new(vec!["docs/café.md".to_owned(), "src/x.rs".to_owned()]);
        assert_eq!(accents.matches("cafe", 5), ["docs/café.md"]);
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
