//! What the prompt arguments ask for: the UI (with a first prompt or without), or one headless
//! task whose prompt may come from stdin. A plain function of the arguments and of stdin, so
//! every combination is tested without a process.

use std::io::{IsTerminal, Read};

/// What a run does with its prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// The terminal UI; `first_prompt` is sent as the first message once it starts.
    Ui { first_prompt: Option<String> },
    /// `brute -p`: one task, headless.
    Headless { prompt: String },
    /// `--input-format stream-json`: a program sends the turns on stdin; `first` is a prompt
    /// from the arguments, sent before them.
    Program { first: Option<String> },
}

/// Prompt arguments brute cannot use: each is a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("the prompt is empty: give the task as text, or `-p -` to read it from stdin")]
    Empty,
    #[error("-p needs a prompt: `-p \"TEXT\"`, `-p -` to read it from stdin, or pipe it in")]
    Missing,
    #[error("two prompts given (`-p` with text and a PROMPT argument): give one")]
    Twice,
    #[error("cannot read the prompt from stdin: {0}")]
    Stdin(#[from] std::io::Error),
}

/// Where a prompt can come from besides the arguments.
pub trait Stdin {
    /// Whether stdin is a terminal (nothing piped in).
    fn is_terminal(&self) -> bool;
    /// Everything on stdin, up to its end.
    fn read_all(&mut self) -> std::io::Result<String>;
}

/// The process's real stdin.
pub struct ProcessStdin;

impl Stdin for ProcessStdin {
    fn is_terminal(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn read_all(&mut self) -> std::io::Result<String> {
        let mut input = String::new();
        std::io::stdin().lock().read_to_string(&mut input)?;
        Ok(input)
    }
}

/// The `-p` value that means "read the prompt from stdin".
const FROM_STDIN: &str = "-";

/// Decides the run from `-p` (`None`: absent; `Some(None)`: given without text), the
/// positional PROMPT and stdin. Stdin is read only for a headless run.
pub fn resolve(
    flag: Option<Option<String>>,
    positional: Option<String>,
    stdin: &mut dyn Stdin,
) -> Result<Run, PromptError> {
    match (flag, positional) {
        (None, None) => Ok(Run::Ui { first_prompt: None }),
        (None, Some(text)) => Ok(Run::Ui {
            first_prompt: Some(non_empty(text)?),
        }),
        (Some(Some(_)), Some(_)) => Err(PromptError::Twice),
        // `-p --model x "task"` (Claude Code's `-p` takes no value): the positional is the task.
        (Some(None), Some(text)) | (Some(Some(text)), None) => headless(text, stdin),
        (Some(None), None) if stdin.is_terminal() => Err(PromptError::Missing),
        (Some(None), None) => headless(FROM_STDIN.to_owned(), stdin),
    }
}

/// The headless prompt from `-p TEXT` (piped stdin added) or `-p -` (stdin alone).
fn headless(text: String, stdin: &mut dyn Stdin) -> Result<Run, PromptError> {
    let prompt = if text == FROM_STDIN {
        non_empty(stdin.read_all()?)?
    } else {
        with_stdin(non_empty(text)?, stdin)?
    };
    Ok(Run::Headless { prompt })
}

/// Adds piped stdin to the prompt (`git diff | brute -p "review this"`).
fn with_stdin(prompt: String, stdin: &mut dyn Stdin) -> Result<String, PromptError> {
    if stdin.is_terminal() {
        return Ok(prompt);
    }
    let input = stdin.read_all()?;
    if input.trim().is_empty() {
        return Ok(prompt);
    }
    Ok(format!("{prompt}\n\n<stdin>\n{}\n</stdin>", input.trim_end()))
}

fn non_empty(text: String) -> Result<String, PromptError> {
    if text.trim().is_empty() {
        Err(PromptError::Empty)
    } else {
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal (`None`) or piped text.
    struct Fake(Option<&'static str>, bool);

    impl Stdin for Fake {
        fn is_terminal(&self) -> bool {
            self.0.is_none()
        }
        fn read_all(&mut self) -> std::io::Result<String> {
            self.1 = true;
            Ok(self.0.unwrap_or("typed at the terminal").to_owned())
        }
    }

    fn run(
        flag: Option<Option<&str>>,
        positional: Option<&str>,
        stdin: Option<&'static str>,
    ) -> Result<Run, PromptError> {
        let mut fake = Fake(stdin, false);
        resolve(
            flag.map(|f| f.map(str::to_owned)),
            positional.map(str::to_owned),
            &mut fake,
        )
    }

    fn headless(prompt: &str) -> Run {
        Run::Headless { prompt: prompt.into() }
    }

    #[test]
    fn without_p_the_ui_opens_with_the_positional_prompt() {
        assert_eq!(run(None, None, None).unwrap(), Run::Ui { first_prompt: None });
        assert_eq!(
            run(None, Some("undo that"), Some("ignored")).unwrap(),
            Run::Ui {
                first_prompt: Some("undo that".into())
            }
        );
        assert!(matches!(run(None, Some("  "), None), Err(PromptError::Empty)));
    }

    #[test]
    fn p_with_text_adds_piped_stdin() {
        assert_eq!(run(Some(Some("review")), None, None).unwrap(), headless("review"));
        assert_eq!(
            run(Some(Some("review")), None, Some("diff\n")).unwrap(),
            headless("review\n\n<stdin>\ndiff\n</stdin>")
        );
        assert_eq!(
            run(Some(Some("review")), None, Some(" \n")).unwrap(),
            headless("review")
        );
    }

    #[test]
    fn p_dash_or_bare_p_reads_the_prompt_from_stdin() {
        assert_eq!(
            run(Some(Some("-")), None, Some("the task\n")).unwrap(),
            headless("the task\n")
        );
        assert_eq!(run(Some(None), None, Some("the task")).unwrap(), headless("the task"));
        // `-p -` at a terminal reads what is typed up to Ctrl-D; bare `-p` there is a mistake.
        assert_eq!(
            run(Some(Some("-")), None, None).unwrap(),
            headless("typed at the terminal")
        );
        assert!(matches!(run(Some(None), None, None), Err(PromptError::Missing)));
        assert!(matches!(
            run(Some(Some("-")), None, Some("\n")),
            Err(PromptError::Empty)
        ));
        assert!(matches!(run(Some(None), None, Some("")), Err(PromptError::Empty)));
    }

    #[test]
    fn bare_p_takes_the_positional_prompt() {
        assert_eq!(run(Some(None), Some("task"), None).unwrap(), headless("task"));
        assert!(matches!(run(Some(Some("a")), Some("b"), None), Err(PromptError::Twice)));
    }

    #[test]
    fn an_empty_p_is_refused_without_reading_stdin() {
        let mut fake = Fake(Some("piped"), false);
        assert!(matches!(
            resolve(Some(Some(String::new())), None, &mut fake),
            Err(PromptError::Empty)
        ));
        assert!(!fake.1, "stdin was read for an empty prompt");
    }
}
