//! The documentation stays true to itself: every link in `README.md`, `BENCHMARKS.md` and
//! `docs/*.md` leads somewhere. A relative link names a file that exists; a `#fragment` names
//! a heading of the file it points into (GitHub's anchors); a reference link has its
//! definition; an `http(s)://` link is well formed (nothing is fetched). The README stays a
//! front door: under 15,000 bytes.
//!
//! Self-contained on purpose (no `mod support`): it reads files and nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The README's size limit, in bytes.
const README_MAX_BYTES: usize = 15_000;

/// Written by the generator from the settings table, not by hand: see
/// [`configuration_reference_exists`].
const GENERATED: &str = "docs/configuration.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links are checked, relative to the repository root.
fn documents() -> Vec<String> {
    let mut files = vec!["README.md".to_owned(), "BENCHMARKS.md".to_owned()];
    let docs = root().join("docs");
    let entries = std::fs::read_dir(&docs).unwrap_or_else(|e| panic!("cannot list {}: {e}", docs.display()));
    let mut pages: Vec<String> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", docs.display())))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The text with fenced code blocks blanked out (their lines kept, empty, so line numbers hold).
fn without_fences(text: &str) -> Vec<String> {
    let mut fence: Option<String> = None;
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
            match &fence {
                Some(open) => {
                    if marker.len() >= open.len()
                        && marker.starts_with(&open[..1])
                        && trimmed[marker.len()..].trim().is_empty()
                    {
                        fence = None;
                    }
                    String::new()
                }
                None if marker.len() >= 3 && (marker.chars().all(|c| c == '`') || marker.chars().all(|c| c == '~')) => {
                    fence = Some(marker);
                    String::new()
                }
                None => line.to_owned(),
            }
        })
        .collect()
}

/// A line with its inline code spans blanked out (a link inside code is not a link).
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        // Find the closing run of the same length.
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let len = chars[j..].iter().take_while(|c| **c == '`').count();
                if len == run {
                    close = Some(j);
                    break;
                }
                j += len;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.extend(std::iter::repeat_n(' ', end + run - i));
                i = end + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// GitHub's anchor for a heading's text: lower case, punctuation other than `-` and `_`
/// dropped, each space a `-`. Inline code marks, emphasis and link targets are not text.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` shows as `text`.
    while let Some(open) = rest.find("](") {
        let Some(close) = rest[open..].find(')') else { break };
        text.push_str(&rest[..open]);
        rest = &rest[open + close + 1..];
    }
    text.push_str(rest);
    text.trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a document's headings make, with GitHub's `-1`, `-2` for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in without_fences(text) {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let rest = &trimmed[hashes..];
        if !(rest.is_empty() || rest.starts_with(' ')) {
            continue;
        }
        let title = rest.trim().trim_end_matches('#').trim_end();
        let base = slug(title);
        let n = seen.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 { base.clone() } else { format!("{base}-{n}") };
        *n += 1;
        out.insert(anchor);
    }
    out
}

/// One link found in a document.
#[derive(Debug)]
struct Link {
    line: usize,
    target: String,
}

/// The closing `)` of an inline link's destination that starts at `start` (parentheses
/// inside it may nest), or `None`.
fn destination_end(chars: &[char], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in chars.iter().enumerate().skip(start) {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// What a document links to, outside code.
#[derive(Debug, Default)]
struct Links {
    /// Inline links (`[text](target)`, images too) and reference definitions' targets.
    inline: Vec<Link>,
    /// Reference definitions (`[label]: target`), by lower-case label.
    definitions: BTreeMap<String, String>,
    /// The labels reference links use (`[text][label]`), with their line.
    references: Vec<(usize, String)>,
}

/// Every link of a document.
fn links(text: &str) -> Links {
    let mut inline = Vec::new();
    let mut definitions = BTreeMap::new();
    let mut references = Vec::new();
    for (index, raw) in without_fences(text).iter().enumerate() {
        let number = index + 1;
        let line = without_code_spans(raw);
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() <= 3
            && let Some(rest) = trimmed.strip_prefix('[')
            && let Some(close) = rest.find("]:")
        {
            let label = rest[..close].trim().to_lowercase();
            let target = rest[close + 2..].split_whitespace().next().unwrap_or_default();
            if !label.is_empty() && !label.starts_with('^') {
                definitions.insert(label, target.trim_matches(['<', '>']).to_owned());
                inline.push(Link {
                    line: number,
                    target: target.trim_matches(['<', '>']).to_owned(),
                });
                continue;
            }
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i + 1 < chars.len() {
            if chars[i] == ']' && chars[i + 1] == '(' {
                if let Some(end) = destination_end(&chars, i + 2) {
                    let inside: String = chars[i + 2..end].iter().collect();
                    let target = inside.trim();
                    // `<target>` or `target "title"`.
                    let target = if let Some(stripped) = target.strip_prefix('<') {
                        stripped.split('>').next().unwrap_or_default()
                    } else {
                        target.split_whitespace().next().unwrap_or_default()
                    };
                    inline.push(Link {
                        line: number,
                        target: target.to_owned(),
                    });
                    i = end;
                }
            } else if chars[i] == ']'
                && chars[i + 1] == '['
                && let Some(len) = chars[i + 2..].iter().position(|c| *c == ']')
            {
                let label: String = chars[i + 2..i + 2 + len].iter().collect();
                if !label.trim().is_empty() {
                    references.push((number, label.trim().to_lowercase()));
                }
                i += 2 + len;
            }
            i += 1;
        }
    }
    Links {
        inline,
        definitions,
        references,
    }
}

/// `a/b/../c` as `a/c`, without touching the filesystem; `None` when it climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// A well-formed absolute URL: a scheme brute's docs use, a host, no spaces.
fn external_ok(target: &str) -> bool {
    if target.chars().any(char::is_whitespace) {
        return false;
    }
    if let Some(address) = target.strip_prefix("mailto:") {
        return address.contains('@');
    }
    let Some(rest) = target
        .strip_prefix("https://")
        .or_else(|| target.strip_prefix("http://"))
    else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or_default();
    let name = host.split(':').next().unwrap_or_default();
    !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-')
        && host
            .split(':')
            .nth(1)
            .is_none_or(|port| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()))
}

/// Every broken link of one document, as `file:line: what`. `anchors_of` answers for the
/// documents read so far (by repository-relative path).
fn check(rel: &str, text: &str, anchors_of: &mut dyn FnMut(&str) -> Option<BTreeSet<String>>) -> Vec<String> {
    let mut broken = Vec::new();
    let Links {
        inline,
        definitions,
        references,
    } = links(text);
    for (line, label) in references {
        if !definitions.contains_key(&label) {
            broken.push(format!("{rel}:{line}: reference link [{label}] has no definition"));
        }
    }
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    for Link { line, target } in inline {
        let here = format!("{rel}:{line}: ({target})");
        if target.is_empty() {
            broken.push(format!("{here}: an empty link"));
            continue;
        }
        if target.contains("://") || target.starts_with("mailto:") {
            if !external_ok(&target) {
                broken.push(format!("{here}: not a well-formed http(s) URL"));
            }
            continue;
        }
        if target.contains(':')
            && !target.starts_with('#')
            && target.split(['/', '#']).next().is_some_and(|s| s.contains(':'))
        {
            broken.push(format!("{here}: a scheme the docs do not use"));
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            rel.to_owned()
        } else {
            let Some(joined) = normalize(&dir.join(path)) else {
                broken.push(format!("{here}: leads outside the repository"));
                continue;
            };
            joined.to_string_lossy().into_owned()
        };
        let on_disk = root().join(&file);
        if !on_disk.exists() {
            if file == GENERATED {
                // Checked by `configuration_reference_exists`, with its own message.
                continue;
            }
            broken.push(format!("{here}: {file} does not exist"));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        if !file.ends_with(".md") {
            broken.push(format!("{here}: a #fragment into a file that is not Markdown"));
            continue;
        }
        let found = if path.is_empty() {
            Some(anchors(text))
        } else {
            anchors_of(&file)
        };
        match found {
            Some(anchors) if anchors.contains(fragment) => {}
            Some(_) => broken.push(format!("{here}: no heading in {file} makes the anchor #{fragment}")),
            None => broken.push(format!("{here}: cannot read {file}")),
        }
    }
    broken
}

#[test]
fn every_link_leads_somewhere() {
    let mut cache: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut anchors_of = |file: &str| {
        cache
            .entry(file.to_owned())
            .or_insert_with(|| {
                std::fs::read_to_string(root().join(file))
                    .ok()
                    .map(|text| anchors(&text))
            })
            .clone()
    };
    let mut broken = Vec::new();
    let mut count = 0;
    for rel in documents() {
        let text = read(&rel);
        count += links(&text).inline.len();
        broken.extend(check(&rel, &text, &mut anchors_of));
    }
    assert!(count > 100, "only {count} links found: the link finder is broken");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn readme_is_a_front_door() {
    let size = read("README.md").len();
    assert!(
        size < README_MAX_BYTES,
        "README.md is {size} bytes; keep it under {README_MAX_BYTES} (move details into docs/)"
    );
}

/// `docs/configuration.md` is generated from the settings table; the README and the user guide
/// link to it. Fails until the generator has written it.
#[test]
fn configuration_reference_exists() {
    let path = root().join(GENERATED);
    assert!(
        path.is_file(),
        "{} does not exist: it is generated from the settings table, and README.md and docs/user-guide.md link to it",
        path.display()
    );
}

/// The checker itself: what it must accept and what it must refuse.
#[test]
fn the_checker_finds_broken_links() {
    assert_eq!(slug("`brute -p`"), "brute--p");
    assert_eq!(slug("Instruction files (AGENTS.md)"), "instruction-files-agentsmd");
    assert_eq!(
        slug("Network: proxies and certificates"),
        "network-proxies-and-certificates"
    );
    assert_eq!(
        slug("Coming from Codex / Claude Code"),
        "coming-from-codex--claude-code"
    );
    assert_eq!(slug("/undo and /redo"), "undo-and-redo");
    assert_eq!(slug("Tools in Rust (the library API)"), "tools-in-rust-the-library-api");
    assert_eq!(slug("See [the guide](x.md) now"), "see-the-guide-now");

    let doc = "# Title\n\n## Part\n\n## Part\n\n```\n[not a link](nowhere.md)\n## not a heading\n```\n\
               Good: [a](#part) [b](#part-1) [c](README.md) [d](https://example.com/x?y=1#z) \
               `[code](nowhere.md)` [e][def] [f](<README.md#title>)\n\n\
               [def]: https://example.com\n";
    assert_eq!(
        anchors(doc),
        ["title", "part", "part-1"].map(str::to_owned).into_iter().collect()
    );
    let from_disk = |file: &str| std::fs::read_to_string(root().join(file)).ok().map(|t| anchors(&t));
    let mut same = |file: &str| {
        if file == "README.md" {
            Some(anchors("# Title\n"))
        } else {
            from_disk(file)
        }
    };
    assert_eq!(check("README.md", doc, &mut same), Vec::<String>::new());

    let bad = "# Title\n\n[a](#nope) [b](missing.md) [c](README.md#nope) [d](https://) [e][undefined] \
               [f](../../etc/passwd) [g](https://bad_host/)\n";
    let found = check("README.md", bad, &mut same);
    assert_eq!(found.len(), 7, "{found:#?}");
    assert!(found[0].contains("[undefined]"), "{found:#?}");
    assert!(
        found.iter().any(|f| f.contains("#nope") && f.contains("no heading")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|f| f.contains("missing.md does not exist")),
        "{found:#?}"
    );
}
