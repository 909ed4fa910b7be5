//! Where a file tool acts: the path the approval step checked, opened beneath the writable root
//! that holds it ([`crate::beneath`]), so a swap of a directory for a link between the check and
//! the act cannot redirect a write, patch or removal out of the project.
//!
//! A call the sandbox mode allows without asking acts beneath its writable root only. A call the
//! person approved (a target outside the writable roots, `read-only` mode), `--yolo`, and
//! `full-access` act beneath `/`; links are still not followed on the way, since the path was
//! resolved when it was checked.

use std::path::{Path, PathBuf};

use super::{ToolContext, ToolError};
use crate::beneath::Root;
use crate::sandbox::Mode;

/// A checked target and the root it is opened beneath.
pub struct Place {
    pub root: Root,
    /// The target relative to the root.
    pub rel: PathBuf,
    /// The target's absolute path (links resolved), for messages.
    pub target: PathBuf,
}

/// The target of `path` for a tool: links resolved all the way (`follow_final`, for writes
/// through a link), or up to its parent (removals change the entry itself).
pub fn target(ctx: &ToolContext, path: &Path, follow_final: bool) -> PathBuf {
    let lexical = super::guard::normalize(&ctx.cwd, path);
    if follow_final {
        return super::guard::real_path(&lexical);
    }
    match (lexical.parent(), lexical.file_name()) {
        (Some(parent), Some(name)) => super::guard::real_path(parent).join(name),
        _ => lexical,
    }
}

/// Where the tool acts on `path` (see the module docs). `shown` is what the model sent.
pub fn place(ctx: &ToolContext, path: &Path, shown: &str, follow_final: bool) -> Result<Place, ToolError> {
    let target = target(ctx, path, follow_final);
    let access = ctx.agent.access();
    let anywhere = access.policy.mode == Mode::FullAccess || ctx.approved_beyond_roots();
    // What the person approved is the path shown to them: if it leads elsewhere now (a link
    // retargeted while the dialog was open), the call does not act.
    if access.policy.mode != Mode::FullAccess
        && let Some(approved) = ctx.approved_target()
        && approved != target
    {
        return Err(ToolError::new(
            "Refused",
            format!(
                "{shown} was approved as {}, but leads to {} now; nothing was changed",
                approved.display(),
                target.display()
            ),
        ));
    }
    let root_path = if anywhere {
        PathBuf::from("/")
    } else {
        let root = access
            .policy
            .writable
            .iter()
            .filter(|w| target.starts_with(w))
            .max_by_key(|w| w.as_os_str().len())
            .cloned();
        match root {
            Some(root) if access.policy.allows_write(&target) => root,
            _ => {
                return Err(ToolError::new(
                    "Refused",
                    format!(
                        "{shown} resolves to {}, outside the writable roots, and this call was not approved to change it",
                        target.display()
                    ),
                ));
            }
        }
    };
    let root = Root::open(&root_path).map_err(|e| ToolError::io(format!("cannot open {}", root_path.display()), &e))?;
    let rel = root
        .relative(&target)
        .map_err(|e| ToolError::io(format!("cannot place {shown}"), &e))?;
    Ok(Place { root, rel, target })
}

/// How long an editor may take to write a file for a tool before brute writes it itself.
const EDITOR_WRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Place {
    /// Writes `bytes` to the target. Through the editor (`fs/write_text_file`, so its buffer
    /// holds the change) when the front end writes buffers, the file was there, the bytes are
    /// text and no command of the session runs: the session is held quiet until the editor
    /// answers, since the editor writes by path and a command could swap a directory for a
    /// link meanwhile. The file, read back through the checked directory, must then hold the
    /// bytes; else, and in every other case, brute writes it atomically beneath its root. The
    /// snapshot taken before is the same either way, so undo sees the change.
    pub async fn store(&self, ctx: &ToolContext, bytes: &[u8], existed: bool) -> std::io::Result<()> {
        if existed
            && ctx.agent.requests.writes_buffers()
            && let Ok(text) = std::str::from_utf8(bytes)
            && let Some(quiet) = ctx.snapshots.spans().quiet()
        {
            let kind = crate::protocol::RequestKind::WriteBuffer {
                path: self.target.display().to_string(),
                content: text.to_owned(),
            };
            let answer = tokio::time::timeout(EDITOR_WRITE_WAIT, ctx.ask(kind)).await;
            let wrote = matches!(answer, Ok(crate::protocol::Response::Wrote { ok: true }))
                && self
                    .root
                    .read_bounded(&self.rel, bytes.len() as u64 + 1)
                    .is_ok_and(|on_disk| on_disk == bytes);
            drop(quiet);
            if wrote {
                return Ok(());
            }
        }
        self.root.write(&self.rel, bytes).map(|_| ())
    }
}
