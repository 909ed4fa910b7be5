//! The transcript: user messages, assistant text (Markdown), reasoning, tool panes and
//! notices. Each entry caches its wrapped lines per width, so a redraw with a long history
//! only renders what changed.

use crate::protocol::{Display, Failure};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;
use super::sanitize::{sanitize, sanitize_keep_tabs};
use super::wrap::{Placed, wrap_all, wrap_all_linked};

/// Lines of a result shown in a collapsed pane.
pub const PREVIEW_LINES: usize = 6;
/// Lines of an edit's diff shown in a collapsed pane (changed lines and their context).
pub const DIFF_PREVIEW_LINES: usize = 10;
/// Unchanged lines shown around each change in a collapsed edit pane.
pub const DIFF_CONTEXT: usize = 1;
/// Live output lines shown while a command runs.
pub const LIVE_LINES: usize = 8;
/// Live output kept per pane (the end is kept).
const LIVE_CAP: usize = 64 * 1024;

const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Spinner ticks a second (the UI's tick is a tenth of a second): a running pane's elapsed
/// time is counted in ticks, so a redraw needs no clock and a test sets the time it shows.
pub const TICKS_PER_SECOND: usize = 10;

/// The state of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStatus {
    Running,
    /// `failure` says how the call failed, if it did.
    Done {
        failure: Option<Failure>,
        duration_ms: u64,
    },
}

/// One tool call's pane.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPane {
    pub call_id: String,
    pub name: String,
    pub key_arg: String,
    /// How the tool asked to be shown.
    pub display: Display,
    pub status: ToolStatus,
    pub live: String,
    pub result: String,
    /// A sub-agent's own tool calls.
    pub children: Vec<ToolPane>,
    /// The spinner tick the call started at (its elapsed time shows while it runs).
    pub started_tick: usize,
}

impl ToolPane {
    /// A running call's pane, from the tool's own summary and display kind.
    pub fn new(call_id: &str, name: &str, summary: &str, display: Display) -> Self {
        Self {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            key_arg: sanitize(summary),
            display,
            status: ToolStatus::Running,
            live: String::new(),
            result: String::new(),
            children: Vec::new(),
            started_tick: 0,
        }
    }

    /// The pane of a call that started at spinner tick `tick`.
    pub fn at(self, tick: usize) -> Self {
        Self {
            started_tick: tick,
            ..self
        }
    }

    /// Appends live output, keeping the end.
    pub fn push_live(&mut self, chunk: &str) {
        self.live.push_str(&sanitize_keep_tabs(chunk));
        if self.live.len() > LIVE_CAP {
            let mut cut = self.live.len() - LIVE_CAP;
            while !self.live.is_char_boundary(cut) {
                cut += 1;
            }
            self.live.drain(..cut);
        }
    }

    pub fn is_running(&self) -> bool {
        self.status == ToolStatus::Running
    }

    fn header(&self, tick: usize, indent: &str) -> Line<'static> {
        let (mark, style) = match &self.status {
            ToolStatus::Running => (
                SPINNER[tick % SPINNER.len()].to_string(),
                Style::new().fg(Color::Yellow),
            ),
            ToolStatus::Done { failure: None, .. } => ("✓".to_owned(), Style::new().fg(Color::Green)),
            ToolStatus::Done {
                failure: Some(failure), ..
            } => failure_mark(*failure),
        };
        let mut spans = vec![
            Span::raw(indent.to_owned()),
            Span::styled(format!("{mark} "), style),
            Span::styled(self.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
        ];
        if !self.key_arg.is_empty() {
            spans.push(Span::styled(
                format!("  {}", self.key_arg),
                Style::new().fg(Color::Cyan),
            ));
        }
        match &self.status {
            ToolStatus::Running => {
                let seconds = tick.wrapping_sub(self.started_tick) / TICKS_PER_SECOND;
                let text = if seconds == 0 {
                    "  running…".to_owned()
                } else {
                    format!("  running… {}", elapsed(seconds))
                };
                spans.push(Span::styled(text, Style::new().fg(Color::DarkGray)));
            }
            // A pane restored from a saved session has no duration.
            ToolStatus::Done { duration_ms: 0, .. } => {}
            ToolStatus::Done { duration_ms, .. } => spans.push(Span::styled(
                format!("  {}", duration(*duration_ms)),
                Style::new().fg(Color::DarkGray),
            )),
        }
        // A failure other than a plain error result says which (an error's text says it).
        if let ToolStatus::Done {
            failure: Some(failure), ..
        } = &self.status
            && *failure != Failure::Error
        {
            spans.push(Span::styled(format!("  {}", failure.word()), failure_mark(*failure).1));
        }
        Line::from(spans)
    }

    /// The pane's lines (unwrapped).
    pub fn lines(&self, tick: usize, expanded: bool) -> Vec<Line<'static>> {
        let mut out = vec![self.header(tick, "")];
        let body_style = Style::new().fg(Color::Gray);
        let bar = || Span::styled("  │ ", Style::new().fg(Color::DarkGray));
        for child in &self.children {
            let mut header = child.header(tick, "  ↳ ");
            if let ToolStatus::Done { failure: Some(_), .. } = child.status {
                let first = child.result.lines().next().unwrap_or("").to_owned();
                header
                    .spans
                    .push(Span::styled(format!("  {first}"), Style::new().fg(Color::Red)));
            }
            out.push(header);
        }
        let is_diff = self.display == Display::Diff && self.status != ToolStatus::Running;
        let body: Vec<&str> = match &self.status {
            ToolStatus::Running => {
                let lines: Vec<&str> = self.live.lines().collect();
                lines[lines.len().saturating_sub(LIVE_LINES)..].to_vec()
            }
            ToolStatus::Done { .. } if is_diff && !expanded => diff_preview(&self.result),
            ToolStatus::Done { .. } => self.result.lines().collect(),
        };
        let limit = if is_diff { DIFF_PREVIEW_LINES } else { PREVIEW_LINES };
        let shown = if expanded || self.is_running() {
            body.len()
        } else {
            body.len().min(limit)
        };
        for line in &body[..shown] {
            let style = if is_diff { diff_style(line) } else { body_style };
            out.push(Line::from(vec![bar(), Span::styled((*line).to_owned(), style)]));
        }
        if shown < body.len() {
            out.push(Line::from(vec![
                bar(),
                Span::styled(
                    format!("… {} more lines (Ctrl-O expands)", body.len() - shown),
                    Style::new().fg(Color::DarkGray),
                ),
            ]));
        }
        out
    }
}

/// What a collapsed edit pane shows: the tool's summary, then only the changed lines with
/// [`DIFF_CONTEXT`] lines of context around them; the `---`/`+++` file headers and `@@` hunk
/// headers are left out and a `⋯` marks skipped lines. Ctrl-O shows the whole diff.
pub fn diff_preview(result: &str) -> Vec<&str> {
    let lines: Vec<&str> = result.lines().collect();
    let header =
        |l: &str| l.starts_with("--- ") || l.starts_with("+++ ") || l.starts_with("@@") || l.starts_with("diff ");
    let Some(diff_start) = lines.iter().position(|l| header(l)) else {
        return lines;
    };
    let mut out: Vec<&str> = lines[..diff_start]
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let body: Vec<(usize, &str)> = lines[diff_start..]
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, l)| !header(l) && !l.starts_with("index ") && !l.starts_with('\\'))
        .collect();
    let changed = |l: &str| l.starts_with('+') || l.starts_with('-');
    let keep: Vec<bool> = (0..body.len())
        .map(|i| {
            let from = i.saturating_sub(DIFF_CONTEXT);
            let to = (i + DIFF_CONTEXT + 1).min(body.len());
            body[from..to].iter().any(|(_, l)| changed(l))
        })
        .collect();
    let mut last: Option<usize> = None;
    for (i, (at, line)) in body.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        // A gap in the kept lines (or a new hunk) gets a marker.
        if last.is_some_and(|prev| prev + 1 != i || body[prev].0 + 1 != *at) {
            out.push("⋯");
        }
        out.push(line);
        last = Some(i);
    }
    out
}

fn diff_style(line: &str) -> Style {
    if line.starts_with("+++") || line.starts_with("---") {
        Style::new().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::new().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::new().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::new().fg(Color::Cyan)
    } else if line == "⋯" {
        Style::new().fg(Color::DarkGray)
    } else {
        Style::new().fg(Color::Gray)
    }
}

/// How a failed call is marked: ✗ in red, or in yellow when the person stopped it
/// (interrupted, a declined question); a denial gets ⊘.
fn failure_mark(failure: Failure) -> (String, Style) {
    match failure {
        Failure::Denied => ("⊘".to_owned(), Style::new().fg(Color::Red)),
        Failure::Declined | Failure::Interrupted => ("✗".to_owned(), Style::new().fg(Color::Yellow)),
        Failure::Error | Failure::Exit(_) | Failure::Signal(_) | Failure::TimedOut => {
            ("✗".to_owned(), Style::new().fg(Color::Red))
        }
    }
}

/// A running call's elapsed time: `42 s`, `3m 05s`.
fn elapsed(seconds: usize) -> String {
    if seconds < 60 {
        format!("{seconds} s")
    } else {
        format!("{}m {:02}s", seconds / 60, seconds % 60)
    }
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// The kind of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Error,
}

/// What the welcome header shows: who answers, where, under which sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Welcome {
    pub version: String,
    pub provider: String,
    pub model: String,
    pub cwd: String,
    pub sandbox: String,
}

impl Welcome {
    /// The first screen's header: a new person learns what runs and the keys that matter.
    fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let label = |name: &str| Span::styled(format!("  {name:<10} "), dim);
        let tip = |text: &str| Line::from(vec![Span::styled("  • ", dim), Span::raw(text.to_owned())]);
        vec![
            Line::from(vec![
                Span::styled("brute", Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)),
                Span::styled(format!(" {}", self.version), dim),
            ]),
            Line::from(vec![
                label("model"),
                Span::raw(format!("{} · {}", self.provider, self.model)),
            ]),
            Line::from(vec![label("directory"), Span::raw(self.cwd.clone())]),
            Line::from(vec![
                label("sandbox"),
                Span::styled(self.sandbox.clone(), Style::new().fg(Color::Cyan)),
            ]),
            Line::styled("  tips", dim),
            tip("/help lists commands and keys"),
            tip("the mouse wheel scrolls; Shift+drag selects text"),
            tip("@ adds a file · Esc interrupts a turn"),
        ]
    }
}

/// One transcript entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// The header on the first screen (scrolls away like any entry).
    Welcome(Welcome),
    /// A prompt, and the files its `@path`s attached (shown as chips).
    User(String, Vec<crate::protocol::Attachment>),
    Assistant(String),
    Reasoning(String),
    Tool(ToolPane),
    Notice(NoticeKind, String),
    /// `/diff`: what a turn or the session changed (title, unified diff, files), shown whole
    /// and coloured; the transcript scrolls through it.
    Diff {
        title: String,
        diff: String,
        files: usize,
    },
}

/// How entries are drawn: view toggles that change every entry's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ViewFlags {
    pub expand_tools: bool,
    pub show_reasoning: bool,
}

impl Entry {
    /// The entry's lines, unwrapped.
    pub fn lines(&self, tick: usize, flags: ViewFlags) -> Vec<Line<'static>> {
        match self {
            Entry::Welcome(welcome) => welcome.lines(),
            Entry::User(text, attached) => {
                let mut out = Vec::new();
                for (i, line) in text.lines().enumerate() {
                    let marker = if i == 0 { "› " } else { "  " };
                    out.push(Line::from(vec![
                        Span::styled(marker, Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)),
                        Span::styled(line.to_owned(), Style::new().add_modifier(Modifier::BOLD)),
                    ]));
                }
                if out.is_empty() {
                    out.push(Line::styled("› ", Style::new().fg(Color::Cyan)));
                }
                if !attached.is_empty() {
                    let mut chips = vec![Span::raw("  ")];
                    for attachment in attached {
                        let what = match attachment.lines {
                            Some(1) => "1 line".to_owned(),
                            Some(n) => format!("{n} lines"),
                            None => "directory".to_owned(),
                        };
                        chips.push(Span::styled(
                            format!(" @{} · {what} ", sanitize(&attachment.path)),
                            Style::new().fg(Color::Black).bg(Color::Cyan),
                        ));
                        chips.push(Span::raw(" "));
                    }
                    out.push(Line::from(chips));
                }
                out
            }
            Entry::Assistant(text) => markdown::render(text),
            Entry::Reasoning(text) => {
                let dim = Style::new().fg(Color::DarkGray).add_modifier(Modifier::ITALIC);
                let count = text.lines().count();
                if !flags.show_reasoning {
                    return vec![Line::styled(format!("▸ thinking ({count} lines, Ctrl-T shows)"), dim)];
                }
                let mut out = vec![Line::styled("▾ thinking", dim)];
                out.extend(text.lines().map(|l| Line::styled(format!("  {l}"), dim)));
                out
            }
            Entry::Tool(pane) => pane.lines(tick, flags.expand_tools),
            Entry::Notice(kind, text) => {
                let style = match kind {
                    NoticeKind::Info => Style::new().fg(Color::DarkGray),
                    NoticeKind::Error => Style::new().fg(Color::Red),
                };
                text.lines().map(|l| Line::styled(l.to_owned(), style)).collect()
            }
            Entry::Diff { title, diff, files } => {
                let mut out = vec![Line::styled(
                    format!("diff of {title}: {files} file(s) changed"),
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )];
                out.extend(diff.lines().map(|line| {
                    let style = if line.starts_with("diff ") {
                        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
                    } else {
                        diff_style(line)
                    };
                    Line::styled(line.to_owned(), style)
                }));
                out
            }
        }
    }

    /// Whether this entry's look changes with the spinner.
    pub fn animated(&self) -> bool {
        match self {
            Entry::Tool(pane) => pane.is_running() || pane.children.iter().any(ToolPane::is_running),
            _ => false,
        }
    }

    /// Plain text for the scrollback print on exit.
    pub fn plain(&self) -> String {
        let lines = self.lines(
            0,
            ViewFlags {
                expand_tools: false,
                show_reasoning: false,
            },
        );
        let mut out: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        out.push(String::new());
        out.join("\n")
    }
}

/// An entry with its wrapped lines cached for one width and view.
#[derive(Debug, Clone)]
pub struct Cached {
    pub entry: Entry,
    /// An assistant message still being streamed: only its complete blocks are rendered as
    /// Markdown (see [`markdown::render_streaming`]).
    open: bool,
    cache: Option<(u16, ViewFlags, Vec<Line<'static>>)>,
    /// The clickable links in the cached lines (assistant answers only).
    links: Vec<Placed>,
}

impl Cached {
    pub fn new(entry: Entry) -> Self {
        Self {
            entry,
            open: false,
            cache: None,
            links: Vec::new(),
        }
    }

    /// An entry whose text is still arriving.
    pub fn streaming(entry: Entry) -> Self {
        Self {
            open: true,
            ..Self::new(entry)
        }
    }

    /// The entry's text is complete: render all of it (once) as Markdown.
    pub fn close(&mut self) {
        if self.open {
            self.open = false;
            self.touch();
        }
    }

    /// Marks the entry changed.
    pub fn touch(&mut self) {
        self.cache = None;
    }

    /// The wrapped lines for `width` (recomputed only when the entry, width or view changed;
    /// animated entries are redrawn every call).
    pub fn wrapped(&mut self, width: u16, tick: usize, flags: ViewFlags) -> &[Line<'static>] {
        let fresh = matches!(&self.cache, Some((w, f, _)) if *w == width && *f == flags) && !self.entry.animated();
        if !fresh {
            let (lines, links) = match (&self.entry, self.open) {
                (Entry::Assistant(text), true) => {
                    let (lines, links, _) = markdown::render_streaming_linked(text);
                    (lines, links)
                }
                (Entry::Assistant(text), false) => markdown::render_linked(text),
                _ => (self.entry.lines(tick, flags), Vec::new()),
            };
            let (mut lines, placed) = if links.is_empty() {
                (wrap_all(&lines, usize::from(width)), Vec::new())
            } else {
                wrap_all_linked(&lines, usize::from(width), &links)
            };
            self.links = placed;
            lines.push(Line::default());
            self.cache = Some((width, flags, lines));
        }
        self.cache.as_ref().map_or(&[], |(_, _, lines)| lines.as_slice())
    }

    /// Where the clickable links are in the lines [`Self::wrapped`] returned last.
    pub fn links(&self) -> &[Placed] {
        &self.links
    }
}

#[cfg(test)]
mod tests {
    use super::diff_preview;

    #[test]
    fn diff_previews_show_changes_with_context_but_no_headers() {
        let result = "Replaced 1 occurrence in a.rs.\n\n--- a/a.rs\n+++ b/a.rs\n@@ -1,9 +1,9 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n-eight\n+EIGHT\n";
        assert_eq!(
            diff_preview(result),
            [
                "Replaced 1 occurrence in a.rs.",
                " three",
                "-four",
                "+FOUR",
                " five",
                "⋯",
                " seven",
                "-eight",
                "+EIGHT",
            ]
        );
        assert_eq!(diff_preview("no diff here\nat all"), ["no diff here", "at all"]);
    }
}
