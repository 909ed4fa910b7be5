//! One permission rule: its syntax (`tool` or `tool(pattern)`), where it came from, and what it
//! matches (see the module docs for the rule syntax).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};

use super::shell::Part;
use super::subject::{RuleSubject, Subject};

/// A malformed rule, or one in a config list (then wrapped in [`RuleError::InConfig`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("permission rule `{rule}` names no tool (expected `tool` or `tool(pattern)`)")]
    EmptyTool { rule: String },
    #[error("permission rule `{rule}`: the tool name may not contain blanks")]
    InvalidTool { rule: String },
    #[error(
        "permission rule `{rule}`: unbalanced parentheses (expected `tool(pattern)`; write `\\(` or `\\)` for a lone parenthesis)"
    )]
    Unbalanced { rule: String },
    #[error("permission rule `{rule}`: empty pattern (write `{tool}` alone to match every call)")]
    EmptyPattern { rule: String, tool: String },
    #[error("permission rule `{rule}`: {message}")]
    Glob { rule: String, message: String },
    #[error("{origin}: permissions.{kind}: {error}")]
    InConfig {
        origin: Source,
        kind: RuleKind,
        error: Box<RuleError>,
    },
}

/// Which list a rule is in; also the order of precedence (deny, then ask, then the two allow
/// kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleKind {
    Deny,
    Ask,
    /// Allows a call that stays in the sandbox.
    Allow,
    /// Allows a call even when it runs unconfined (see the module docs).
    AllowUnsandboxed,
}

impl RuleKind {
    /// Every kind, in precedence order.
    pub const ALL: [RuleKind; 4] = [
        RuleKind::Deny,
        RuleKind::Ask,
        RuleKind::Allow,
        RuleKind::AllowUnsandboxed,
    ];

    /// The config key of this kind's list.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Deny => "deny",
            RuleKind::Ask => "ask",
            RuleKind::Allow => "allow",
            RuleKind::AllowUnsandboxed => "allow_unsandboxed",
        }
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Where a rule came from, so `brute permissions` and approval dialogs can say so.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// A config file (user or project `config.toml`).
    File(PathBuf),
    /// A command-line flag.
    CommandLine,
    /// Approved during this session ("always allow").
    Session,
    /// Remembered approvals for this project.
    ProjectApprovals,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(path) => write!(f, "{}", path.display()),
            Source::CommandLine => f.write_str("command line"),
            Source::Session => f.write_str("session"),
            Source::ProjectApprovals => f.write_str("project approvals"),
        }
    }
}

/// How a rule's argument pattern is read (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Syntax {
    /// Full globset syntax, for file paths.
    Path,
    /// Only `*` is special, for command lines, URLs and anything else.
    Text,
}

/// A rule's argument pattern, read both ways: which one applies is the tool's to say, and a
/// rule's tool glob may name tools of either kind.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    text: GlobMatcher,
    /// `Err` holds why the pattern is no valid path glob.
    path: Result<GlobMatcher, String>,
}

impl Pattern {
    /// Whether the pattern matches `text` read with `syntax`; `None` when it cannot be read
    /// that way.
    fn matches(&self, text: &str, syntax: Syntax) -> Option<bool> {
        match syntax {
            Syntax::Text => Some(self.text.is_match(text)),
            Syntax::Path => self.path.as_ref().ok().map(|glob| glob.is_match(text)),
        }
    }
}

/// One parsed rule: a tool-name glob and an optional argument pattern.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool_text: String,
    pattern_text: Option<String>,
    tool: GlobMatcher,
    pub(super) pattern: Option<Pattern>,
}

impl Rule {
    /// Parses `tool` or `tool(pattern)`, so config mistakes are reported when loaded, not
    /// when a call slips through.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let err_rule = || text.to_owned();
        let (tool, pattern) = match text.find('(') {
            None if text.contains(')') => return Err(RuleError::Unbalanced { rule: err_rule() }),
            None => (text, None),
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .filter(|inner| balanced(inner))
                    .ok_or_else(|| RuleError::Unbalanced { rule: err_rule() })?;
                (&text[..open], Some(inner.trim()))
            }
        };
        if tool.is_empty() {
            return Err(RuleError::EmptyTool { rule: err_rule() });
        }
        if tool.chars().any(char::is_whitespace) {
            return Err(RuleError::InvalidTool { rule: err_rule() });
        }
        if pattern == Some("") {
            return Err(RuleError::EmptyPattern {
                rule: err_rule(),
                tool: tool.to_owned(),
            });
        }
        let glob_error = |e: globset::Error| RuleError::Glob {
            rule: err_rule(),
            message: e.kind().to_string(),
        };
        let tool_matcher = GlobBuilder::new(tool)
            .literal_separator(false)
            .build()
            .map_err(glob_error)?
            .compile_matcher();
        let pattern_matcher = match pattern {
            None => None,
            Some(pattern) => Some(Pattern {
                text: pattern_glob(pattern, Syntax::Text).map_err(glob_error)?,
                path: pattern_glob(pattern, Syntax::Path).map_err(|e| e.kind().to_string()),
            }),
        };
        Ok(Rule {
            text: match pattern {
                Some(pattern) => format!("{tool}({pattern})"),
                None => tool.to_owned(),
            },
            tool_text: tool.to_owned(),
            pattern_text: pattern.map(str::to_owned),
            tool: tool_matcher,
            pattern: pattern_matcher,
        })
    }

    /// A rule matching exactly this argument of this tool (metacharacters of its `subject`'s
    /// patterns escaped), for "always allow this command" approvals.
    pub fn exact(tool: &str, subject: RuleSubject, argument: &str) -> Result<Rule, RuleError> {
        let special: &[char] = match subject.syntax() {
            Syntax::Path => &['\\', '*', '?', '[', ']', '{', '}', '(', ')'],
            Syntax::Text => &['\\', '*', '(', ')'],
        };
        let mut pattern = String::with_capacity(argument.len());
        for c in argument.trim().chars() {
            if special.contains(&c) {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        Rule::parse(&format!("{tool}({pattern})"))
    }

    /// The rule as written (trimmed), for listings and messages.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The tool-name glob.
    pub fn tool(&self) -> &str {
        &self.tool_text
    }

    /// The argument pattern; `None` matches every call of the tool.
    pub fn pattern(&self) -> Option<&str> {
        self.pattern_text.as_deref()
    }

    /// Whether the rule is about this tool (its arguments aside).
    pub fn matches_tool(&self, tool: &str) -> bool {
        self.tool.is_match(tool)
    }

    /// Why the pattern cannot be read as a path glob, if it cannot.
    pub fn path_pattern_error(&self) -> Option<&str> {
        self.pattern
            .as_ref()
            .and_then(|p| p.path.as_ref().err())
            .map(String::as_str)
    }

    /// Whether the pattern matches this text read with `syntax` (always, without a pattern);
    /// a pattern that cannot be read so matches for a deny or ask rule (`restricting`) and
    /// not for an allow rule.
    pub(super) fn pattern_matches(&self, text: &str, syntax: Syntax, restricting: bool) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| p.matches(text, syntax).unwrap_or(restricting))
    }

    /// Deny/ask reading: matches whenever the call might be what the rule names.
    pub(super) fn restricts(&self, subject: &Subject, syntax: Syntax) -> bool {
        if self.pattern.is_none() {
            return true;
        }
        let pattern_matches = |text: &str| self.pattern_matches(text, syntax, true);
        match subject {
            Subject::Missing => true,
            Subject::Text(text) => pattern_matches(text),
            Subject::Path {
                raw,
                normalized,
                resolved,
                ..
            } => {
                pattern_matches(raw) || pattern_matches(normalized) || resolved.iter().any(|form| pattern_matches(form))
            }
            Subject::Shell { line, split } => {
                pattern_matches(line)
                    || split
                        .parts
                        .iter()
                        .any(|part| pattern_matches(&part.text) || pattern_matches(part.command()))
            }
        }
    }

    /// Allow reading of one piece of text (a shell part is judged by the caller).
    pub(super) fn allows(&self, subject: &Subject, syntax: Syntax) -> bool {
        if self.pattern.is_none() {
            return true;
        }
        let pattern_matches = |text: &str| self.pattern_matches(text, syntax, false);
        match subject {
            Subject::Missing | Subject::Shell { .. } => false,
            Subject::Text(text) => pattern_matches(text),
            Subject::Path {
                raw,
                normalized,
                climbs,
                resolved,
            } => {
                !climbs
                    && (pattern_matches(raw) || pattern_matches(normalized))
                    && (resolved.is_empty() || resolved.iter().any(|form| pattern_matches(form)))
            }
        }
    }

    /// Allow reading of one shell part (command lines take text patterns).
    pub(super) fn allows_part(&self, part: &Part) -> bool {
        let pattern_matches = |text: &str| self.pattern_matches(text, Syntax::Text, false);
        pattern_matches(&part.text) || (part.env_safe && part.command_at > 0 && pattern_matches(part.command()))
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.text == other.text
    }
}

impl Eq for Rule {}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        Rule::parse(s)
    }
}

/// Whether parentheses balance, skipping backslash-escaped characters.
fn balanced(pattern: &str) -> bool {
    let mut depth = 0usize;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}

/// Compiles an argument pattern; `*` crosses `/` in both syntaxes.
fn pattern_glob(pattern: &str, syntax: Syntax) -> Result<GlobMatcher, globset::Error> {
    let glob = match syntax {
        Syntax::Path => GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()?,
        Syntax::Text => {
            let glob = text_glob(pattern);
            GlobBuilder::new(&glob)
                .literal_separator(false)
                .backslash_escape(false)
                .build()?
        }
    };
    Ok(glob.compile_matcher())
}

/// Turns a text pattern into a glob where only `*` is special (runs of `*` are one `*`).
fn text_glob(pattern: &str) -> String {
    let mut glob = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&next @ ('*' | '(' | ')' | '\\')) => {
                    chars.next();
                    glob.push_str(&globset::escape(&next.to_string()));
                }
                _ => glob.push('\\'),
            },
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                glob.push('*');
            }
            c => glob.push_str(&globset::escape(&c.to_string())),
        }
    }
    glob
}
