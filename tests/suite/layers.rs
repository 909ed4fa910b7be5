//! The layers of `src/` are a rule the suite keeps: every top-level module has a layer in
//! [`LAYERS`], and non-test code may use only modules of lower layers. The graph is read from
//! the sources (`crate::x` paths, grouped `use crate::{x, y}`, and `super::` paths that climb
//! out of a top-level module), so a new back-arrow or a new module without a place fails here
//! with the file that made it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top. A module may use any module of a lower line, none of its own line or above.
/// docs/architecture.md explains the lines.
const LAYERS: &[&[&str]] = &[
    // Plain helpers with no dependencies inside brute.
    &[
        "beneath", "busy", "dates", "files", "lines", "net", "paths", "sandbox", "sanitize", "timing",
    ],
    // Talking to models.
    &["provider"],
    &["secrets"],
    // Ops, events, requests to the person, the typed tool result.
    &["protocol"],
    // Services that know nothing of tools.
    &["hooks", "session"],
    &["permission"],
    // The tool contract, the registry, the built-in tools and the state tools see.
    &["tool"],
    // What adapts or wraps tools.
    &["mcp", "pipeline"],
    // Settings, layered from every source.
    &["config"],
    // The conversation: the actor, the turn loop, compaction, commands, sub-agents.
    &["agent"],
    // Wiring: settings into a running conversation.
    &["app"],
    // The command line's definitions and its non-conversation commands.
    &["cli"],
    // Front ends.
    &["acp", "oneshot", "tui"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src/` (`agent/mod.rs` → `[agent]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source without comments, string literals and `#[cfg(test)]` items (test code may use
/// anything).
fn code_of(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if source[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if source[i..].starts_with("/*") {
            i += source[i..].find("*/").map_or(bytes.len() - i, |end| end + 2);
        } else if bytes[i] == b'"' && !source[..i].ends_with('\'') {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            // Raw strings (`r"..."`, `r#"..."#`) hold no paths worth reading either; their
            // content, like any string's, is dropped.
            out.push_str("\"\"");
            let _ = start;
        } else if source[i..].starts_with("#[cfg(test)]") {
            // Skip the attribute and the item it guards: up to the end of its block or `;`.
            i += "#[cfg(test)]".len();
            let mut depth = 0usize;
            while i < bytes.len() {
                match bytes[i] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    b';' if depth == 0 => {
                        i += 1;
                        break;
                    }
                    _ => {}
                }
                i += 1;
            }
        } else {
            let c = source[i..].chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules a file's code names.
fn uses(code: &str, here: &[String], tops: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| is_ident(*c)).collect();
                found.insert(name);
            }
        } else {
            found.insert(rest.chars().take_while(|c| is_ident(*c)).collect());
        }
    }
    // `super::` chains that climb to the crate root name a top-level module next.
    let mut rest = code;
    while let Some(at) = rest.find("super::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at..];
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            rest = &rest["super::".len()..];
            continue;
        }
        let mut depth = 0;
        while let Some(next) = rest.strip_prefix("super::") {
            depth += 1;
            rest = next;
        }
        if depth >= here.len() {
            found.insert(rest.chars().take_while(|c| is_ident(*c)).collect());
        }
    }
    found.retain(|name| tops.contains(name) && name != &here[0]);
    found
}

#[test]
fn top_level_modules_use_only_lower_layers() {
    let src = src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let layer: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, names)| names.iter().map(move |name| (*name, rank)))
        .collect();
    let mut tops = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("below src");
        let top = module_path(rel)[0].clone();
        // The binaries' entry points (`main.rs`, `bin/`) are not modules of the library.
        if top != "main" && top != "lib" && top != "bin" {
            tops.insert(top);
        }
    }
    let mut problems = Vec::new();
    for top in &tops {
        if !layer.contains_key(top.as_str()) {
            problems.push(format!(
                "src/{top}: a top-level module without a layer (add it to LAYERS)"
            ));
        }
    }
    for name in layer.keys() {
        if !tops.contains(*name) {
            problems.push(format!("LAYERS names `{name}`, which is not a module in src/"));
        }
    }
    let mut edges = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("below src");
        let here = module_path(rel);
        if here[0] == "main" || here[0] == "lib" || here[0] == "bin" {
            continue;
        }
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let Some(&from) = layer.get(here[0].as_str()) else {
            continue;
        };
        for used in uses(&code_of(&source), &here, &tops) {
            edges += 1;
            let Some(&to) = layer.get(used.as_str()) else { continue };
            if to >= from {
                problems.push(format!(
                    "src/{}: `{}` (layer {from}) uses `{used}` (layer {to}); only lower layers may be used",
                    rel.display(),
                    here[0]
                ));
            }
        }
    }
    assert!(edges > 50, "the graph reader found only {edges} uses; it is broken");
    assert!(problems.is_empty(), "the layers are broken:\n{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_every_way_of_naming_a_module() {
    let tops: BTreeSet<String> = ["agent", "tool", "config", "session", "protocol"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let here = vec!["tool".to_owned(), "exec".to_owned()];
    let code = code_of(
        "use crate::{agent::Agent, config};\nfn f() { crate::session::x(); super::super::protocol::y(); }\n\
         // crate::nothing_in_comments\nconst S: &str = \"crate::nor_in_strings\";\n\
         #[cfg(test)]\nmod tests { use crate::agent::Hidden; }\n",
    );
    let found = uses(&code, &here, &tops);
    let expected: BTreeSet<String> = ["agent", "config", "session", "protocol"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, expected);
    // `super::` that stays inside the module is not a use of another one.
    assert!(uses("super::Executor", &here, &tops).is_empty());
}
