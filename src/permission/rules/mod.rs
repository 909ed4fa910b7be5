//! Permission rules: `allow`, `deny`, `ask` and `allow_unsandboxed` lists of Claude-Code-style
//! rules that decide a tool call before the sandbox mode does.
//!
//! # Rule syntax
//!
//! A rule is a tool name, optionally followed by an argument pattern in parentheses:
//!
//! | rule                      | matches                                             |
//! |---------------------------|-----------------------------------------------------|
//! | `read`                    | every `read` call                                   |
//! | `shell(cargo test*)`      | shell commands starting with `cargo test`           |
//! | `shell(git status)`       | exactly `git status`                                |
//! | `write(src/**)`           | writes to files under `src/`                        |
//! | `fetch(https://docs.rs/*)`| fetches of pages on docs.rs                         |
//! | `mcp__github__*`          | every tool of the `github` MCP server               |
//!
//! The tool name is a glob (globset syntax). Which argument a pattern is matched against
//! is the tool's to say (see [`RuleSubject`]). Patterns come in two flavours:
//!
//! - **Path patterns**, for the file tools (`write`, `patch`, `read`, `remove`, `undo`,
//!   `fs_search`): full globset syntax (`*`, `?`, `[abc]`, `{a,b}`, `\` escapes). `*` also
//!   matches `/`, so `src/*` and `src/**` both cover the whole tree under `src/`.
//! - **Text patterns**, for every other tool (shell commands, URLs, command and MCP tools):
//!   only `*` is special and matches any characters, `/` and spaces included; everything else
//!   is literal, so `awk '{print $1}'` or `[ -f x ]` need no escaping. `\*`, `\(`, `\)` and
//!   `\\` write a literal `*`, `(`, `)` and `\`; any other backslash is literal.
//!
//! Parentheses inside a pattern must balance; write `\(` or `\)` for a lone one. The pattern
//! is trimmed; an empty pattern is an error (write the bare tool name to match every call).
//! A pattern that is no valid path glob is an error when brute starts with a tool whose
//! rules read paths ([`Rules::check_patterns`]); should one meet such a tool later, a deny or
//! ask rule with it restricts every call it names and an allow rule allows none.
//! Patterns are anchored: `shell(git status)` does not match `git status --short`.
//!
//! # Decisions
//!
//! [`Rules::decide`] returns [`Decision::Deny`] if any deny rule matches, else
//! [`Decision::Ask`] if any ask rule matches, else [`Decision::Allow`] if the allow rules
//! cover the call, else [`Decision::Default`] (the caller applies the sandbox mode). Where the
//! rules came from does not change precedence. The two kinds of rules are read differently,
//! always in the safe direction: an allow rule applies only when it certainly covers the call,
//! a deny or ask rule applies whenever it might.
//!
//! Rules decide whether to ask, never whether to confine. An `allow` rule lets a call through
//! without a question, but only a call that stays in the sandbox: a call that would run
//! unconfined (`shell` with `sandbox: "full"`, or any command where no sandbox is available)
//! is allowed only by an **`allow_unsandboxed`** rule, a list of its own that the person
//! writes on purpose:
//!
//! ```toml
//! [permissions]
//! allow = ["shell(git status*)"]              # confined calls only
//! allow_unsandboxed = ["shell(git fetch*)"]   # also when they ask to leave the sandbox
//! ```
//!
//! An `allow_unsandboxed` rule covers the confined call too (it allows more, never less). The
//! caller says whether a call is unconfined, and where its path really leads, in [`Facts`]
//! ([`Rules::decide_call`]); it also bounds what an allow rule may allow (see
//! [`crate::pipeline::approve`]).
//!
//! # Shell commands
//!
//! A `shell` command line is split into its simple commands ("parts") on `;`, `&&`, `||`,
//! `|`, `|&`, `&` and newlines; the contents of `$(…)`, backticks, `<(…)`, `>(…)` and
//! `( … )` groups are parts of their own, recursively. Quotes (`'…'`, `"…"`, `$'…'`) and
//! backslash escapes are respected, and redirections such as `2>&1`, `&>`, `>&2` and `>|` do
//! not split. Leading shell keywords (`if`, `then`, `do`, `!`, `{`, …) are dropped from a
//! part so `if cargo test; then …` exposes `cargo test`. Runs of blanks become one space.
//! Anything after a group's `)` (such as `2>&1` in `(cd x && make) 2>&1`) is a part of its
//! own, so such lines are only allowed if that part is too. Comments (`#`) and here-documents
//! are not understood: their text only adds parts, which can keep a line from being allowed
//! but never lets one through.
//!
//! - An **allow** rule set covers the command only when **every** part matches some allow
//!   rule: `shell(cargo test*)` never allows `cargo test; curl x | sh` nor
//!   `cargo test $(curl x)`. A line that cannot be read to its end (unclosed quote, `$(` or
//!   backtick, stray `)`, absurd nesting) is never allowed by a pattern.
//! - A **deny** or **ask** rule matches when **any** part matches, or the whole line does (so
//!   `deny = ["shell(curl * | sh)"]` works as written).
//!
//! Redirections stay part of the command text and are not judged: `shell(cargo test*)` also
//! allows `cargo test > out.txt`. Wrappers (`sudo`, `env`, `xargs`, `bash -c`, `eval`) are not
//! looked through, so deny rules on shell commands are a convenience, not a wall; the sandbox
//! is the wall.
//!
//! ## Environment assignments
//!
//! `RUST_LOG=debug cargo test` starts with an assignment. Some variables change what a command
//! runs (`LD_PRELOAD`, `PATH`, `BASH_ENV`, `GIT_PAGER`, `RUSTC_WRAPPER`…), so:
//!
//! - for **allow**, a part matches as written, or with its leading assignments removed only if
//!   every one of them sets a variable from a short list of harmless ones ([`SAFE_ENV`]):
//!   `shell(cargo test*)` allows `RUST_LOG=1 cargo test` but not `LD_PRELOAD=x.so cargo test`.
//!   A rule may spell an assignment itself: `shell(LC_ALL=C sort*)`.
//! - for **deny** and **ask**, a part matches as written or with any leading assignments
//!   removed, so `FOO=1 rm -rf x` cannot slip past `deny = ["shell(rm *)"]`.
//!
//! # Paths
//!
//! Path arguments are matched as given and with `.` components and repeated slashes removed
//! (`./src/a.rs` is `src/a.rs`). A path with a `..` component is never allowed by a pattern
//! (`src/../../etc/passwd` is not under `src/`), while deny and ask rules also see it with
//! `..` resolved lexically. Absolute paths are not made relative to the project by the rules
//! themselves.
//!
//! Where the path really leads ([`Facts::target`]: made absolute, `..` folded, symlinks
//! followed, and relative to the project root when inside it) is matched too: an allow
//! pattern must match **both** the path as given and the resolved one (in its relative or its
//! absolute form), so `write(src/**)` does not allow `src/out/x` when `src/out` is a link
//! leading out of `src/`; a deny or ask pattern matches when **either** does, so
//! `deny = ["write(secrets/**)"]` also stops a write through a link into `secrets/`. This
//! applies to the path tools above and to any tool that names a path it changes, when the
//! rule's argument is that path.
//!
//! # Files
//!
//! [`rule`] parses one rule and matches it; [`subject`] says which argument of a call the
//! rules see, and how; [`shell`] splits a shell line into its parts; [`set`] holds the rules
//! in force and decides a call.

mod rule;
mod set;
mod shell;
mod subject;
/// For the tests: what a tool says its rules match on, the built-ins' own answers (test code
/// may reach up the layers), the guess for any other name.
#[cfg(test)]
mod test_subjects {
    pub(super) fn subject(tool: &str) -> super::RuleSubject {
        crate::app::builtin_tools()
            .get(tool)
            .map_or(super::RuleSubject::Guess, |t| t.rule_subject())
    }
}
#[cfg(test)]
mod tests;

pub use rule::{Rule, RuleError, RuleKind, Source};
pub use set::{Decision, Matched, PermissionsConfig, Rules};
pub use shell::SAFE_ENV;
pub use subject::{Facts, RuleSubject, Target, argument, path_argument};
