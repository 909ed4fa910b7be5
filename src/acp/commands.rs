//! The built-in slash commands an editor's prompt may be (`/undo`, `/redo`, `/diff`,
//! `/compact [focus]`, `/clear`): each is the op the terminal's command sends, not a turn,
//! and its prompt is answered once the op has had its say (a notice, a diff, a compaction).
//! Custom commands are prompts like any other (the core expands them).

use crate::protocol::{Event, Op};

/// The built-in commands offered to editors: name, description, input hint.
pub const BUILT_IN: &[(&str, &str, Option<&str>)] = &[
    (
        "undo",
        "Take back the last turn's file changes (and the turn itself, if you choose)",
        None,
    ),
    ("redo", "Re-apply what the last undo took back", None),
    (
        "diff",
        "Show what the last turn changed (`/diff session`: every turn)",
        Some("session"),
    ),
    ("compact", "Compact the conversation now", Some("what to keep in focus")),
    ("clear", "Forget the conversation and start a new one", None),
];

/// The op a prompt's text asks for when it is a built-in command.
pub fn parse(text: &str) -> Option<Op> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    Some(match (name, args) {
        ("undo", "") => Op::Undo {
            force: false,
            partial: false,
        },
        ("redo", "") => Op::Redo {
            force: false,
            partial: false,
        },
        ("diff", "") => Op::Diff { session: false },
        ("diff", "session") => Op::Diff { session: true },
        ("compact", focus) => Op::Compact {
            focus: (!focus.is_empty()).then(|| focus.to_owned()),
        },
        ("clear", "") => Op::Clear,
        _ => return None,
    })
}

/// Whether `event` is the last word of a built-in command's op (its outcome, or a refusal).
pub fn ends_command(event: &Event) -> bool {
    matches!(
        event,
        Event::Notice { .. } | Event::Diff { .. } | Event::CompactionFinished { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_commands_are_their_ops_and_anything_else_a_prompt() {
        assert_eq!(
            parse(" /undo "),
            Some(Op::Undo {
                force: false,
                partial: false
            })
        );
        assert_eq!(parse("/diff session"), Some(Op::Diff { session: true }));
        assert_eq!(
            parse("/compact the parser"),
            Some(Op::Compact {
                focus: Some("the parser".into())
            })
        );
        assert_eq!(parse("/clear"), Some(Op::Clear));
        assert_eq!(parse("/undo everything"), None, "an argument it does not take");
        assert_eq!(parse("/review src"), None, "a custom command is a prompt");
        assert_eq!(parse("undo"), None);
    }
}
