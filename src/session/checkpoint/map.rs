//! [`Manifest`]: path → [`FileState`] in path order, held compactly. A big tree's manifest is
//! loaded at the start of every run and updated by every walk: as a `BTreeMap<String, _>` it
//! took a heap string per path and B-tree nodes, and building one from a stored manifest held a
//! second list of every entry. Here the paths are one buffer and the states one vector, with
//! a span per entry, in path order: filled in one pass from a sorted source, or sorted in
//! place from a walk's [`Found`] entries (its buffer becomes the manifest's); the few paths
//! set or removed later are kept beside them until they are many.

use std::collections::BTreeMap;

use super::manifest::FileState;

/// Path (relative, `/`-separated) → state, iterated in path (byte) order.
#[derive(Clone, Default)]
pub struct Manifest {
    /// Entries in path order.
    sorted: Table,
    /// Which of `sorted`'s entries were removed since (one bit each; empty when none).
    gone: Vec<u64>,
    removed: usize,
    /// Paths set since `sorted` was built that it does not have.
    added: BTreeMap<String, FileState>,
}

/// Where one path lies in a [`Table`]'s text.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

/// Entries with their paths in one buffer: path `i` is `text[spans[i]]`. A manifest's are in
/// path order; their text need not be (a walk's paths are sorted by moving their spans, not
/// their bytes: see [`Table::sort`]).
#[derive(Clone, Default)]
struct Table {
    text: String,
    spans: Vec<Span>,
    states: Vec<FileState>,
}

impl Table {
    fn with_capacity(entries: usize, path_bytes: usize) -> Self {
        Table {
            text: String::with_capacity(path_bytes),
            spans: Vec::with_capacity(entries),
            states: Vec::with_capacity(entries),
        }
    }

    fn len(&self) -> usize {
        self.states.len()
    }

    fn path(&self, i: usize) -> &str {
        let Span { start, end } = self.spans[i];
        &self.text[start as usize..end as usize]
    }

    /// Where `path` is, or where it would go (the entries being in path order).
    fn search(&self, path: &str) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.path(mid).cmp(path) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(low)
    }

    /// Appends an entry when the text stays within `limit` bytes (what a span addresses);
    /// gives the state back otherwise.
    fn append(&mut self, limit: usize, path: &str, state: FileState) -> Result<(), FileState> {
        // Places are numbered by u32 when sorted (empty paths take no bytes).
        if self.states.len() >= u32::MAX as usize {
            return Err(state);
        }
        let (Ok(start), Some(end)) = (
            u32::try_from(self.text.len()),
            Some(self.text.len() + path.len())
                .filter(|end| *end <= limit)
                .and_then(|end| u32::try_from(end).ok()),
        ) else {
            return Err(state);
        };
        self.text.push_str(path);
        self.spans.push(Span { start, end });
        self.states.push(state);
        Ok(())
    }

    /// Appends `path` when it sorts after every path held and fits the buffer; gives the
    /// entry back otherwise.
    fn push(&mut self, path: &str, state: FileState) -> Result<(), FileState> {
        if self.states.is_empty() || self.path(self.len() - 1) < path {
            self.append(SPAN_LIMIT, path, state)
        } else {
            Err(state)
        }
    }

    /// Sorts the entries by path; of equal paths only the one appended last stays. Places
    /// are sorted first (four bytes each), then the spans and states move along the
    /// permutation's cycles: a big tree's first walk is sorted without a second copy of its
    /// states or its paths.
    fn sort(&mut self) {
        debug_assert!(u32::try_from(self.len()).is_ok(), "more entries than a u32 numbers");
        let Ok(len) = u32::try_from(self.len()) else {
            // Not reached: `append` numbers no more places than a u32 does.
            return;
        };
        let mut order: Vec<u32> = (0..len).collect();
        // Of equal paths the later place sorts last: the one kept.
        order.sort_unstable_by(|a, b| self.path(*a as usize).cmp(self.path(*b as usize)).then(a.cmp(b)));
        // Place `i` takes what is at `order[i]`: each cycle by swaps; a place done points at itself.
        for first in 0..order.len() {
            let mut at = first;
            loop {
                let from = order[at] as usize;
                order[at] = at as u32;
                if from == first {
                    break;
                }
                self.spans.swap(at, from);
                self.states.swap(at, from);
                at = from;
            }
        }
        drop(order);
        // Equal paths are neighbours now: each run keeps its last.
        let mut kept = 0;
        for i in 0..self.len() {
            if i + 1 < self.len() && self.path(i) == self.path(i + 1) {
                continue;
            }
            self.spans.swap(kept, i);
            self.states.swap(kept, i);
            kept += 1;
        }
        self.spans.truncate(kept);
        self.states.truncate(kept);
    }
}

/// The most path bytes a [`Table`] holds (what its spans address).
const SPAN_LIMIT: usize = u32::MAX as usize;

/// Entries in the order a walk found them, their paths in one buffer (no heap string per
/// path): a [`Manifest`] once sorted, by [`Manifest::from`]. A big tree's first walk finds
/// every entry new, and this is the only list of them it holds.
#[derive(Default)]
pub struct Found {
    table: Table,
    /// What came after the buffer was full, in order (more path bytes than a span addresses).
    overflow: Vec<(String, FileState)>,
}

impl Found {
    /// Room for `entries` whose paths take `path_bytes` in all (what a walk knows it will add).
    pub fn reserve_exact(&mut self, entries: usize, path_bytes: usize) {
        self.table.text.reserve_exact(path_bytes);
        self.table.spans.reserve_exact(entries);
        self.table.states.reserve_exact(entries);
    }

    pub fn len(&self) -> usize {
        self.table.len() + self.overflow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of all the paths held.
    pub fn path_bytes(&self) -> usize {
        self.table.text.len() + self.overflow.iter().map(|(path, _)| path.len()).sum::<usize>()
    }

    /// The entries there is room for (of lists to gather, the one to gather into).
    pub fn capacity(&self) -> usize {
        self.table.states.capacity()
    }

    pub fn push(&mut self, path: &str, state: FileState) {
        self.push_within(SPAN_LIMIT, path, state);
    }

    fn push_within(&mut self, limit: usize, path: &str, state: FileState) {
        let state = if self.overflow.is_empty() {
            match self.table.append(limit, path, state) {
                Ok(()) => return,
                Err(state) => state,
            }
        } else {
            state
        };
        self.overflow.push((path.to_owned(), state));
    }

    /// Moves `other`'s entries in after these, leaving `other` empty with its room kept.
    pub fn append(&mut self, other: &mut Found) {
        self.append_within(SPAN_LIMIT, other);
    }

    fn append_within(&mut self, limit: usize, other: &mut Found) {
        let base = self.table.text.len();
        let fits = self.overflow.is_empty()
            && self.table.len() + other.table.len() < u32::MAX as usize
            && base
                .checked_add(other.table.text.len())
                .is_some_and(|end| end <= limit && u32::try_from(end).is_ok());
        if fits {
            let shift = base as u32;
            self.table.text.push_str(&other.table.text);
            self.table.spans.extend(other.table.spans.iter().map(|span| Span {
                start: span.start + shift,
                end: span.end + shift,
            }));
            self.table.states.append(&mut other.table.states);
        } else {
            for i in 0..other.table.len() {
                let state = std::mem::take(&mut other.table.states[i]);
                let path = other.table.path(i);
                self.push_within(limit, path, state);
            }
        }
        other.table.text.clear();
        other.table.spans.clear();
        other.table.states.clear();
        for (path, state) in other.overflow.drain(..) {
            self.push_within(limit, &path, state);
        }
    }
}

impl From<Found> for Manifest {
    /// Sorted by path; a path given twice keeps its last state (as a map's `insert` would).
    fn from(found: Found) -> Manifest {
        let Found { mut table, overflow } = found;
        table.sort();
        table.text.shrink_to_fit();
        table.spans.shrink_to_fit();
        table.states.shrink_to_fit();
        let mut manifest = Manifest {
            sorted: table,
            ..Manifest::default()
        };
        for (path, state) in overflow {
            manifest.insert(path, state);
        }
        manifest
    }
}

/// Added entries beyond this many (and a quarter of the sorted ones) are merged into them.
const MERGE_AFTER: usize = 4096;

impl Manifest {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty manifest with room for `entries` whose paths take `path_bytes` in all (what a
    /// stored manifest says it holds).
    pub fn with_capacity(entries: usize, path_bytes: usize) -> Self {
        Self {
            sorted: Table::with_capacity(entries, path_bytes),
            ..Self::default()
        }
    }

    /// Adds an entry; in path order (as stored manifests and walks give them) this appends in
    /// place, otherwise it is [`Manifest::insert`].
    pub fn push(&mut self, path: &str, state: FileState) {
        if !self.added.is_empty() || self.removed > 0 {
            self.insert(path.to_owned(), state);
            return;
        }
        if let Err(state) = self.sorted.push(path, state) {
            self.insert(path.to_owned(), state);
        }
    }

    /// Gives back the room reserved and not filled (a stored manifest's size is a guess).
    pub fn shrink_to_fit(&mut self) {
        self.sorted.text.shrink_to_fit();
        self.sorted.spans.shrink_to_fit();
        self.sorted.states.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.sorted.len() - self.removed + self.added.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn is_gone(&self, i: usize) -> bool {
        self.gone.get(i / 64).is_some_and(|word| word & (1 << (i % 64)) != 0)
    }

    fn set_gone(&mut self, i: usize, gone: bool) {
        if self.gone.is_empty() {
            if !gone {
                return;
            }
            self.gone = vec![0; self.sorted.len().div_ceil(64)];
        }
        if i / 64 >= self.gone.len() {
            // Entries were appended since the first removal.
            self.gone.resize(self.sorted.len().div_ceil(64), 0);
        }
        let bit = 1u64 << (i % 64);
        if gone {
            self.gone[i / 64] |= bit;
        } else {
            self.gone[i / 64] &= !bit;
        }
    }

    /// Where `path` is among the sorted entries, unless removed.
    fn find(&self, path: &str) -> Option<usize> {
        self.sorted.search(path).ok().filter(|i| !self.is_gone(*i))
    }

    pub fn get(&self, path: &str) -> Option<&FileState> {
        match self.find(path) {
            Some(i) => Some(&self.sorted.states[i]),
            None => self.added.get(path),
        }
    }

    /// `path`'s state, with its place among the sorted entries when it is one of them (a
    /// walk records an unchanged entry by its place, not by a copy of its path).
    pub fn locate(&self, path: &str) -> Option<(Option<usize>, &FileState)> {
        match self.find(path) {
            Some(i) => Some((Some(i), &self.sorted.states[i])),
            None => self.added.get(path).map(|state| (None, state)),
        }
    }

    /// The path and state at sorted place `i` (see [`Manifest::locate`]).
    pub fn at(&self, i: usize) -> Option<(&str, &FileState)> {
        (i < self.sorted.len() && !self.is_gone(i)).then(|| (self.sorted.path(i), &self.sorted.states[i]))
    }

    /// The paths of the entries that are neither at a sorted place whose bit is set in `seen`
    /// nor among `seen_paths` (sorted), in path order.
    pub fn unseen(&self, seen: &[u64], seen_paths: &[String]) -> Vec<String> {
        let bit = |i: usize| seen.get(i / 64).is_some_and(|word| word & (1 << (i % 64)) != 0);
        let mut unseen: Vec<String> = (0..self.sorted.len())
            .filter(|i| !self.is_gone(*i) && !bit(*i))
            .map(|i| self.sorted.path(i).to_owned())
            .collect();
        let added = self.added.keys().filter(|path| seen_paths.binary_search(path).is_err());
        if self.added.is_empty() {
            return unseen;
        }
        unseen.extend(added.cloned());
        unseen.sort_unstable();
        unseen
    }

    pub fn get_mut(&mut self, path: &str) -> Option<&mut FileState> {
        match self.find(path) {
            Some(i) => Some(&mut self.sorted.states[i]),
            None => self.added.get_mut(path),
        }
    }

    pub fn contains_key(&self, path: &str) -> bool {
        self.get(path).is_some()
    }

    /// Sets `path`'s state; the one it replaces, if any.
    pub fn insert(&mut self, path: String, state: FileState) -> Option<FileState> {
        match self.sorted.search(&path) {
            Ok(i) if self.is_gone(i) => {
                self.set_gone(i, false);
                self.removed -= 1;
                self.sorted.states[i] = state;
                None
            }
            Ok(i) => Some(std::mem::replace(&mut self.sorted.states[i], state)),
            Err(_) => {
                let old = self.added.insert(path, state);
                if self.added.len() > MERGE_AFTER.max(self.sorted.len() / 4) {
                    self.merge();
                }
                old
            }
        }
    }

    pub fn remove(&mut self, path: &str) -> Option<FileState> {
        if let Some(state) = self.added.remove(path) {
            return Some(state);
        }
        let i = self.find(path)?;
        self.set_gone(i, true);
        self.removed += 1;
        Some(std::mem::take(&mut self.sorted.states[i]))
    }

    /// Keeps the entries `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut FileState) -> bool) {
        self.added.retain(|path, state| keep(path, state));
        let mut dropped = Vec::new();
        let Table { text, spans, states } = &mut self.sorted;
        for (i, (state, span)) in states.iter_mut().zip(spans.iter()).enumerate() {
            let gone = self.gone.get(i / 64).is_some_and(|word| word & (1 << (i % 64)) != 0);
            if !gone && !keep(&text[span.start as usize..span.end as usize], state) {
                *state = FileState::default();
                dropped.push(i);
            }
        }
        for i in dropped {
            self.set_gone(i, true);
            self.removed += 1;
        }
    }

    /// Folds what was set and removed since into the sorted entries.
    fn merge(&mut self) {
        let mut merged = Table::with_capacity(self.len(), self.sorted.text.len());
        let old = std::mem::take(self);
        let mut spill = BTreeMap::new();
        for (path, state) in old.into_iter() {
            if let Err(state) = merged.push(&path, state) {
                spill.insert(path, state);
            }
        }
        self.sorted = merged;
        self.added = spill;
    }

    /// Every entry, in path order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            manifest: self,
            next: 0,
            added: AddedIter::All(self.added.iter()).peekable(),
        }
    }

    /// The entries from `path` on (`path` itself included), in path order.
    pub fn iter_from<'a>(&'a self, path: &str) -> Iter<'a> {
        let next = self.sorted.search(path).unwrap_or_else(|at| at);
        let added = self
            .added
            .range::<str, _>((std::ops::Bound::Included(path), std::ops::Bound::Unbounded));
        Iter {
            manifest: self,
            next,
            added: AddedIter::Range(added).peekable(),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(path, _)| path)
    }

    pub fn values(&self) -> impl Iterator<Item = &FileState> {
        self.iter().map(|(_, state)| state)
    }
}

/// The added entries an [`Iter`] merges in: all of them, or a range.
pub enum AddedIter<'a> {
    All(std::collections::btree_map::Iter<'a, String, FileState>),
    Range(std::collections::btree_map::Range<'a, String, FileState>),
}

impl<'a> Iterator for AddedIter<'a> {
    type Item = (&'a String, &'a FileState);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            AddedIter::All(iter) => iter.next(),
            AddedIter::Range(iter) => iter.next(),
        }
    }
}

/// A [`Manifest`]'s entries in path order: its sorted entries and its added ones, merged.
pub struct Iter<'a> {
    manifest: &'a Manifest,
    next: usize,
    added: std::iter::Peekable<AddedIter<'a>>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a FileState);

    fn next(&mut self) -> Option<Self::Item> {
        let sorted = &self.manifest.sorted;
        while self.next < sorted.len() && self.manifest.is_gone(self.next) {
            self.next += 1;
        }
        let base = (self.next < sorted.len()).then(|| sorted.path(self.next));
        let take_added = match (base, self.added.peek()) {
            (Some(path), Some((added, _))) => added.as_str() < path,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_added {
            return self.added.next().map(|(path, state)| (path.as_str(), state));
        }
        let path = base?;
        let state = &sorted.states[self.next];
        self.next += 1;
        Some((path, state))
    }
}

impl<'a> IntoIterator for &'a Manifest {
    type Item = (&'a str, &'a FileState);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The owned entries of a [`Manifest`], in path order.
pub struct IntoIter {
    sorted: std::iter::Zip<std::vec::IntoIter<String>, std::vec::IntoIter<FileState>>,
    added: std::iter::Peekable<std::collections::btree_map::IntoIter<String, FileState>>,
    next_sorted: Option<(String, FileState)>,
}

impl Iterator for IntoIter {
    type Item = (String, FileState);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next_sorted.is_none() {
            self.next_sorted = self.sorted.next();
        }
        let take_added = match (&self.next_sorted, self.added.peek()) {
            (Some((path, _)), Some((added, _))) => added < path,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_added {
            return self.added.next();
        }
        self.next_sorted.take()
    }
}

impl IntoIterator for Manifest {
    type Item = (String, FileState);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        let Manifest {
            sorted, gone, added, ..
        } = self;
        let is_gone = |i: usize| gone.get(i / 64).is_some_and(|word| word & (1 << (i % 64)) != 0);
        let mut paths = Vec::with_capacity(sorted.len());
        let mut states = Vec::with_capacity(sorted.len());
        let Table {
            text,
            spans,
            states: all,
        } = sorted;
        for (i, (state, span)) in all.into_iter().zip(spans).enumerate() {
            if !is_gone(i) {
                paths.push(text[span.start as usize..span.end as usize].to_owned());
                states.push(state);
            }
        }
        IntoIter {
            sorted: paths.into_iter().zip(states),
            added: added.into_iter().peekable(),
            next_sorted: None,
        }
    }
}

impl FromIterator<(String, FileState)> for Manifest {
    /// In any order; a path given twice keeps its last state (as a map's `insert` would).
    fn from_iter<I: IntoIterator<Item = (String, FileState)>>(entries: I) -> Self {
        let entries = entries.into_iter();
        let mut found = Found::default();
        found.reserve_exact(entries.size_hint().0, 0);
        for (path, state) in entries {
            found.push(&path, state);
        }
        Manifest::from(found)
    }
}

impl Extend<(String, FileState)> for Manifest {
    fn extend<I: IntoIterator<Item = (String, FileState)>>(&mut self, entries: I) {
        for (path, state) in entries {
            self.insert(path, state);
        }
    }
}

impl std::ops::Index<&str> for Manifest {
    type Output = FileState;

    /// Panics when `path` has no entry, as a map's indexing does (tests and known paths).
    #[allow(clippy::expect_used)]
    fn index(&self, path: &str) -> &FileState {
        self.get(path).expect("no entry for this path in the manifest")
    }
}

impl PartialEq for Manifest {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Manifest {}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Manifest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, FileState>::deserialize(deserializer)?;
        Ok(map.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: u64) -> FileState {
        FileState {
            id: format!("{n:064x}").into(),
            size: n,
            ..FileState::default()
        }
    }

    /// Reproducible pseudo-random numbers (xorshift) from `seed`.
    fn numbers(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Every operation, at random, on a [`Manifest`] and on the `BTreeMap` it replaced: they
    /// must agree after each (merges included: the added entries pass `MERGE_AFTER`).
    #[test]
    fn a_manifest_behaves_as_the_ordered_map_it_replaced() {
        let mut next = numbers(0x2545_f491_4f6c_dd1du64);
        for round in 0..6 {
            let start = (next() % 6000) as usize;
            // A sorted start, as a stored manifest is decoded; sometimes given unsorted.
            let mut given: Vec<(String, FileState)> = (0..start)
                .map(|i| (format!("d{}/f{:05}", i % 7, i * 3), state(i as u64)))
                .collect();
            if round % 2 == 1 {
                given.reverse();
                given.push(given[0].clone());
            }
            let mut manifest: Manifest = given.iter().cloned().collect();
            let mut model: BTreeMap<String, FileState> = given.into_iter().collect();
            for step in 0..12_000 {
                let path = format!("d{}/f{:05}", next() % 8, next() % 20_000);
                match next() % 10 {
                    0..=3 => assert_eq!(
                        manifest.insert(path.clone(), state(step)),
                        model.insert(path, state(step))
                    ),
                    4..=5 => assert_eq!(manifest.remove(&path), model.remove(&path)),
                    6 => assert_eq!(manifest.get(&path), model.get(&path)),
                    7 => {
                        if let Some(state) = manifest.get_mut(&path) {
                            state.size += 1;
                        }
                        if let Some(state) = model.get_mut(&path) {
                            state.size += 1;
                        }
                    }
                    8 if step % 500 == 0 => {
                        let from: Vec<_> = manifest.iter_from(&path).take(40).collect();
                        let expected: Vec<_> = model
                            .range::<str, _>((std::ops::Bound::Included(path.as_str()), std::ops::Bound::Unbounded))
                            .take(40)
                            .map(|(p, s)| (p.as_str(), s))
                            .collect();
                        assert_eq!(from, expected);
                    }
                    9 if step % 3000 == 0 => {
                        let cut = next() % 4;
                        manifest.retain(|p, _| p.len() % 4 != cut as usize);
                        model.retain(|p, _| p.len() % 4 != cut as usize);
                    }
                    _ => {}
                }
                assert_eq!(manifest.len(), model.len());
            }
            assert!(manifest.iter().eq(model.iter().map(|(p, s)| (p.as_str(), s))));
            let expected: Manifest = model.clone().into_iter().collect();
            assert_eq!(manifest, expected);
            assert_eq!(manifest.clone().into_iter().collect::<BTreeMap<_, _>>(), model);
        }
    }

    #[test]
    fn a_path_given_twice_keeps_its_last_state_and_pushes_in_order_append() {
        let manifest: Manifest = [("b", 1), ("a", 2), ("b", 3)]
            .into_iter()
            .map(|(p, n)| (p.to_owned(), state(n)))
            .collect();
        assert_eq!(manifest.len(), 2);
        assert_eq!(manifest["b"].size, 3);
        // Runs of one path anywhere (first, last, three long): the last of each is kept.
        let given = [("b", 1), ("a", 2), ("b", 3), ("a", 4), ("c", 5), ("a", 6), ("c", 7)];
        let manifest: Manifest = given.into_iter().map(|(p, n)| (p.to_owned(), state(n))).collect();
        let kept: Vec<(&str, u64)> = manifest.iter().map(|(p, s)| (p, s.size)).collect();
        assert_eq!(kept, [("a", 6), ("b", 3), ("c", 7)]);
        let mut pushed = Manifest::with_capacity(3, 8);
        pushed.push("a", state(1));
        pushed.push("c", state(2));
        pushed.push("b", state(3)); // out of order: set beside the sorted ones
        pushed.push("c", state(4)); // again: replaces
        assert_eq!(pushed.added.len(), 1);
        let order: Vec<(&str, u64)> = pushed.iter().map(|(p, s)| (p, s.size)).collect();
        assert_eq!(order, [("a", 1), ("b", 3), ("c", 4)]);
    }

    /// Entries appended after a removal (put back since) can be removed in their turn.
    #[test]
    fn an_entry_appended_after_a_removal_can_be_removed() {
        let mut manifest: Manifest = [("a", 1), ("b", 2)]
            .into_iter()
            .map(|(p, n)| (p.to_owned(), state(n)))
            .collect();
        assert!(manifest.remove("a").is_some());
        assert!(manifest.insert("a".to_owned(), state(3)).is_none());
        for i in 0..200 {
            manifest.push(&format!("c{i:03}"), state(i));
        }
        assert_eq!(manifest.remove("c150").map(|s| s.size), Some(150));
        assert_eq!(manifest.len(), 2 + 199);
        assert!(manifest.get("c150").is_none() && manifest.get("c151").is_some());
    }

    /// A walk's entries, in any order and with paths given more than once, sorted into a
    /// manifest: the map that inserting them one by one makes, whether they came in one list
    /// or in lists appended together, and whether or not their paths pass what a span
    /// addresses (tried with small limits: past it, entries are kept beside the buffer).
    #[test]
    fn found_entries_sort_into_the_map_inserting_them_makes() {
        let mut next = numbers(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..40 {
            let count = (next() % 3000) as usize;
            let spread = 1 + next() % 4000;
            let given: Vec<(String, FileState)> = (0..count)
                .map(|i| (format!("d{}/\u{e9}{}", next() % 5, next() % spread), state(i as u64)))
                .collect();
            let mut model = BTreeMap::new();
            for (path, state) in &given {
                model.insert(path.clone(), state.clone());
            }
            let limit = match round % 4 {
                0 => SPAN_LIMIT,
                1 => 0,
                _ => (next() % (count as u64 * 12 + 1)) as usize,
            };
            let mut whole = Found::default();
            for (path, state) in &given {
                whole.push_within(limit, path, state.clone());
            }
            assert_eq!(whole.len(), count);
            assert_eq!(
                whole.overflow.is_empty(),
                given.iter().map(|(p, _)| p.len()).sum::<usize>() <= limit
            );
            // The same entries in lists of random lengths, appended in order.
            let mut appended = Found::default();
            let mut rest = given.as_slice();
            while !rest.is_empty() {
                let take = 1 + (next() as usize) % rest.len();
                let mut part = Found::default();
                for (path, state) in &rest[..take] {
                    part.push_within(
                        if next().is_multiple_of(2) { limit } else { SPAN_LIMIT },
                        path,
                        state.clone(),
                    );
                }
                appended.append_within(limit, &mut part);
                assert!(part.is_empty());
                rest = &rest[take..];
            }
            assert_eq!(appended.len(), count);
            let expected: Vec<(&str, &FileState)> = model.iter().map(|(p, s)| (p.as_str(), s)).collect();
            for found in [whole, appended] {
                let manifest = Manifest::from(found);
                assert_eq!(manifest.len(), model.len());
                assert!(manifest.iter().eq(expected.iter().copied()), "round {round}");
                for (path, state) in &model {
                    assert_eq!(manifest.get(path), Some(state));
                }
            }
        }
    }
}
