//! What a command may do: the sandbox mode and the paths it may write.
//!
//! | mode | files | network |
//! |---|---|---|
//! | `read-only` | read anywhere, write nowhere (but `/dev/null` and the like) | off |
//! | `workspace-write` (default) | write the project and the extra roots (every `.git` in them, nested ones too, and `.brute/` stay read-only) and the temp dirs; never brute's data and config dirs (they hold trust and approvals), wherever they lie; toolchain caches only when named as extra roots | off |
//! | `full-access` | as the person, unconfined | on |
//!
//! The init ([`super::init`]) enforces a policy with Landlock (files), read-only bind mounts
//! (`.git`, `.brute/`, brute's own dirs) and a network namespace with only a loopback of its own
//! (network). Toolchain caches (`~/.cargo/registry`, `~/.cache/pre-commit`, the Go build cache)
//! are not writable by default: what a command leaves there runs later as the person (a
//! rewritten `build.rs`, a pre-commit hook), outside any sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How much a command may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    FullAccess,
}

impl Mode {
    pub const NAMES: &'static [&'static str] = &["read-only", "workspace-write", "full-access"];

    /// Parses `read-only`, `workspace-write` or `full-access`.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "read-only" => Some(Self::ReadOnly),
            "workspace-write" => Some(Self::WorkspaceWrite),
            "full-access" => Some(Self::FullAccess),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

/// A mode made concrete for one project.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub mode: Mode,
    /// Trees commands may write (empty in read-only mode).
    pub writable: Vec<PathBuf>,
    /// Trees inside writable ones that stay read-only (`.git`, `.brute`, brute's own dirs).
    pub read_only: Vec<PathBuf>,
    /// The roots whose nested `.git` entries are found and made read-only too when a command
    /// starts (the project and the extra roots; see [`super::git_dirs`]).
    pub git_roots: Vec<PathBuf>,
    /// Whether commands reach the network.
    pub network: bool,
    /// `None`: commands read everywhere (the modes above). `Some`: they read only these trees
    /// (plus what they may write) — a skill script's grant, with the base set that lets a
    /// program start ([`BASE_READ`]) added by the caller.
    pub readable: Option<Vec<PathBuf>>,
}

/// What every program needs to read to start at all (libraries, interpreters, `/etc`'s
/// loader and locale files, the null and random devices, its own fresh `/proc`).
pub const BASE_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
];

impl Policy {
    /// The policy of `mode` for the project at `root`: `extra` are more writable roots
    /// (`--add-dir`, `writable_roots`), `own` are brute's data and config dirs, read-only to
    /// commands wherever they lie (a `HOME` under `/tmp` puts them in a writable tree).
    pub fn for_project(mode: Mode, root: &Path, extra: &[PathBuf], own: &[PathBuf]) -> Self {
        match mode {
            Mode::FullAccess => Self {
                mode,
                network: true,
                ..Self::default()
            },
            Mode::ReadOnly => Self {
                mode,
                network: false,
                ..Self::default()
            },
            Mode::WorkspaceWrite => {
                // Resolved once, here: a root is never resolved again later, so a command that
                // swaps one for a link cannot move it (see `allows_write` and the init).
                let mut writable: Vec<PathBuf> = std::iter::once(root.to_path_buf())
                    .chain(extra.iter().cloned())
                    .chain(std::iter::once(std::env::temp_dir()))
                    .chain(std::iter::once(PathBuf::from("/tmp")))
                    .map(|w| real(&w))
                    .collect();
                writable.sort();
                writable.dedup();
                // brute's data and config dirs are never writable to commands: they hold the
                // trust list and approvals a command could otherwise widen for itself.
                let read_only = std::iter::once(root)
                    .chain(extra.iter().map(PathBuf::as_path))
                    .flat_map(|r| [r.join(".git"), r.join(".brute")])
                    .chain(own.iter().cloned())
                    .collect();
                Self {
                    mode,
                    writable,
                    read_only,
                    git_roots: std::iter::once(root.to_path_buf())
                        .chain(extra.iter().cloned())
                        .collect(),
                    network: false,
                    readable: None,
                }
            }
        }
    }

    /// Whether commands run confined at all.
    pub fn confined(&self) -> bool {
        self.mode != Mode::FullAccess
    }

    /// Whether a built-in tool may change `path` (absolute, symlinks resolved) without asking.
    pub fn allows_write(&self, path: &Path) -> bool {
        match self.mode {
            Mode::FullAccess => true,
            Mode::ReadOnly => false,
            Mode::WorkspaceWrite => {
                // Every `.git` is read-only, nested repositories' too, found or not.
                self.writable.iter().any(|w| path.starts_with(w))
                    && !path.components().any(|c| c.as_os_str() == ".git")
                    && !self
                        .read_only
                        .iter()
                        .any(|r| path.starts_with(r) || path.starts_with(real(r)))
            }
        }
    }

    /// The init's arguments for this policy (before `--` and the program).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--mode".into(), self.mode.as_str().into()];
        for path in &self.writable {
            args.push("--write".into());
            args.push(path.clone().into_os_string());
        }
        for path in &self.read_only {
            args.push("--ro".into());
            args.push(path.clone().into_os_string());
        }
        for path in &self.git_roots {
            args.push("--git-root".into());
            args.push(path.clone().into_os_string());
        }
        args.push("--net".into());
        args.push(if self.network { "on" } else { "off" }.into());
        if let Some(readable) = &self.readable {
            args.push("--limit-reads".into());
            args.push("on".into());
            for path in readable {
                args.push("--read".into());
                args.push(path.clone().into_os_string());
            }
        }
        args
    }

    /// Reads what [`Policy::to_args`] wrote; returns the policy and the rest (the program).
    pub fn from_args(args: &[OsString]) -> (Self, &[OsString]) {
        let mut policy = Self {
            mode: Mode::FullAccess,
            network: true,
            ..Self::default()
        };
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1);
            match (args[i].to_str(), value) {
                (Some("--"), _) => return (policy, &args[i + 1..]),
                (Some("--mode"), Some(v)) => {
                    policy.mode = v.to_str().and_then(Mode::parse).unwrap_or(Mode::ReadOnly);
                }
                (Some("--write"), Some(v)) => policy.writable.push(PathBuf::from(v)),
                (Some("--ro"), Some(v)) => policy.read_only.push(PathBuf::from(v)),
                (Some("--git-root"), Some(v)) => policy.git_roots.push(PathBuf::from(v)),
                (Some("--net"), Some(v)) => policy.network = v == "on",
                (Some("--limit-reads"), Some(_)) => {
                    policy.readable.get_or_insert_with(Vec::new);
                }
                (Some("--read"), Some(v)) => policy.readable.get_or_insert_with(Vec::new).push(PathBuf::from(v)),
                // No options: the rest is the program (an older caller).
                _ => return (policy, &args[i..]),
            }
            i += 2;
        }
        (policy, &args[args.len()..])
    }
}

fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let own = [PathBuf::from("/tmp/home/.local/share/brute")];
        let policy = Policy::for_project(Mode::WorkspaceWrite, Path::new("/p"), &[PathBuf::from("/x")], &own);
        assert!(policy.writable.contains(&PathBuf::from("/p")));
        assert!(policy.read_only.contains(&PathBuf::from("/p/.git")));
        let mut args = policy.to_args();
        args.push("--".into());
        args.push("bash".into());
        let (back, rest) = Policy::from_args(&args);
        assert_eq!(back, policy);
        assert_eq!(rest, [OsString::from("bash")]);
        assert!(policy.allows_write(Path::new("/p/src/a.rs")));
        assert!(!policy.allows_write(Path::new("/p/.git/config")));
        assert!(!policy.allows_write(Path::new("/etc/passwd")));
        // brute's own dirs stay read-only although /tmp is writable.
        assert!(policy.allows_write(Path::new("/tmp/x")));
        assert!(!policy.allows_write(Path::new("/tmp/home/.local/share/brute/trusted.toml")));
        // A read-limited policy (a skill script's) round-trips too, an empty list included.
        for readable in [vec![PathBuf::from("/skill"), PathBuf::from("/p/src")], Vec::new()] {
            let limited = Policy {
                readable: Some(readable),
                ..Policy::for_project(Mode::WorkspaceWrite, Path::new("/p"), &[], &[])
            };
            let mut args = limited.to_args();
            args.push("--".into());
            args.push("x".into());
            assert_eq!(Policy::from_args(&args).0, limited);
        }
    }

    #[test]
    fn modes_parse() {
        for name in Mode::NAMES {
            assert_eq!(Mode::parse(name).map(Mode::as_str), Some(*name));
        }
    }
}
