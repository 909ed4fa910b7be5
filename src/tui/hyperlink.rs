//! OSC 8 hyperlinks (`ESC ] 8 ; ; URL ESC \` text `ESC ] 8 ; ; ESC \`) for links in the
//! transcript, where the terminal supports them (the `hyperlinks` setting).
//!
//! ratatui's cells cannot carry an escape: its buffer diff measures each cell's symbol, so
//! an escape inside a symbol would shift every later cell. Instead, the view records a
//! link table for the frame ([`Run`]s: a row, a column range and an address); once the frame
//! is rendered, [`Links::capture`] copies the cells of those runs out of the buffer, and
//! [`LinkBackend`] — a wrapper around the real backend — adds them to the cells ratatui's
//! diff hands it, opening the link before a run's first cell and closing it after its last.
//! The escapes only exist in the copies given to the terminal writer, after the diff was
//! computed, so widths, wide characters and graphemes are untouched, and ratatui still
//! places the cursor (the composer's) itself after the flush.
//!
//! A terminal keeps a cell's link until that cell is printed again, so cells that were
//! linked in the previous frame and are not now (the transcript scrolled) are printed again
//! without a link even when ratatui's diff thinks they did not change. A run that is on the
//! screen as it was, untouched by the diff, is not sent again (a keystroke costs no bytes).
//!
//! Addresses come from the model and are untrusted: only `http`, `https` and `mailto` links
//! are made clickable (`file:` could open a script the model just wrote; `javascript:` and
//! the like mean nothing to a terminal), every byte outside printable ASCII is
//! percent-encoded (no control character, ESC, BEL or C1 code can end the sequence early),
//! and an address longer than [`MAX_URL_BYTES`] stays plain text.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::{Buffer, Cell, CellWidth};
use ratatui::layout::{Position, Rect, Size};

/// The longest address made a link (after encoding): the limit browsers have long used;
/// terminals cap OSC 8 addresses around 2083 to 8192 bytes.
pub const MAX_URL_BYTES: usize = 2083;

/// The schemes made clickable.
pub const SCHEMES: &[&str] = &["http", "https", "mailto"];

/// Opens a link to `url` (which must come from [`clickable`]).
fn open(url: &str) -> String {
    format!("\x1b]8;;{url}\x1b\\")
}

/// Ends the open link.
pub const CLOSE: &str = "\x1b]8;;\x1b\\";

/// The `hyperlinks` setting: on only where the terminal is known to understand OSC 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Setting {
    #[default]
    Auto,
    On,
    Off,
}

impl Setting {
    /// Reads the setting (`None` for anything else).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(Self::Auto),
            "on" => Some(Self::On),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    /// Whether links are written. `env` reads an environment variable; `tmux_features` asks
    /// the tmux server for the attached client's terminal features (asked only under tmux).
    pub fn enabled(self, env: impl Fn(&str) -> Option<String>, tmux_features: impl FnOnce() -> Option<String>) -> bool {
        match self {
            Self::On => true,
            Self::Off => false,
            Self::Auto => terminal_supports(env, tmux_features),
        }
    }
}

/// Whether the terminal is one known to understand OSC 8. Under tmux only when tmux passes
/// them on: tmux 3.4 and later do for clients with the `hyperlinks` terminal feature
/// (`terminal-features`), which `#{client_termfeatures}` lists; older tmux drops them.
/// GNU screen never passes them.
pub fn terminal_supports(env: impl Fn(&str) -> Option<String>, tmux_features: impl FnOnce() -> Option<String>) -> bool {
    let term = env("TERM").unwrap_or_default();
    if term == "dumb" {
        return false;
    }
    if env("TMUX").is_some_and(|v| !v.is_empty()) {
        return tmux_features().is_some_and(|features| features.split(',').any(|f| f.trim() == "hyperlinks"));
    }
    if term.starts_with("screen") || term.starts_with("tmux") || env("STY").is_some() {
        return false;
    }
    let number = |name: &str| env(name).and_then(|v| v.trim().parse::<u64>().ok());
    if [
        "KITTY_WINDOW_ID",
        "WT_SESSION",
        "WEZTERM_EXECUTABLE",
        "GHOSTTY_RESOURCES_DIR",
    ]
    .iter()
    .any(|name| env(name).is_some_and(|v| !v.is_empty()))
    {
        return true;
    }
    // GNOME Terminal and every VTE terminal since 0.50; Konsole since 20.12.
    if number("VTE_VERSION").is_some_and(|v| v >= 5000) || number("KONSOLE_VERSION").is_some_and(|v| v >= 201_200) {
        return true;
    }
    let program = env("TERM_PROGRAM").unwrap_or_default();
    if ["iTerm.app", "WezTerm", "vscode", "ghostty", "rio"].contains(&program.as_str()) {
        return true;
    }
    [
        "xterm-kitty",
        "xterm-ghostty",
        "alacritty",
        "foot",
        "foot-extra",
        "wezterm",
        "contour",
        "rio",
    ]
    .contains(&term.as_str())
}

/// Asks the tmux server this process runs under for the client's terminal features
/// (`None` when tmux does not answer within a moment).
pub fn tmux_client_features() -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("tmux")
        .args(["display-message", "-p", "#{client_termfeatures}"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if started.elapsed() < std::time::Duration::from_millis(500) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    Some(out.trim().to_owned())
}

/// The address to put in an OSC 8 sequence for a link to `url`, or `None` when it must stay
/// plain text: a scheme other than [`SCHEMES`], nothing after the scheme, or longer than
/// [`MAX_URL_BYTES`] once every byte outside printable ASCII is percent-encoded.
pub fn clickable(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once(':')?;
    let valid = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !valid || !SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
        return None;
    }
    let after = if scheme.eq_ignore_ascii_case("mailto") {
        rest
    } else {
        rest.strip_prefix("//")?
    };
    if after.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(url.len());
    for byte in url.bytes() {
        if (0x21..=0x7e).contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
        if out.len() > MAX_URL_BYTES {
            return None;
        }
    }
    Some(out)
}

/// One row's run of linked cells: where it starts, how many columns it spans, and the
/// address (already made safe by [`clickable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub x: u16,
    pub y: u16,
    pub width: u16,
    pub url: Arc<str>,
}

/// Takes out of `runs` what `rect` covers (a dialog or hint drawn over the transcript).
pub fn cover(runs: &mut Vec<Run>, rect: Rect) {
    let mut out = Vec::with_capacity(runs.len());
    for run in runs.drain(..) {
        let end = run.x + run.width;
        if run.y < rect.y || run.y >= rect.bottom() || end <= rect.x || run.x >= rect.right() {
            out.push(run);
            continue;
        }
        if run.x < rect.x {
            out.push(Run {
                width: rect.x - run.x,
                ..run.clone()
            });
        }
        if end > rect.right() {
            out.push(Run {
                x: rect.right(),
                width: end - rect.right(),
                ..run
            });
        }
    }
    *runs = out;
}

/// A run with the cells it covers in the frame: (column, cell), trailing halves of wide
/// characters left out.
#[derive(Debug, Clone, PartialEq)]
struct Captured {
    run: Run,
    cells: Vec<(u16, Cell)>,
}

/// What the next flush must write besides ratatui's diff.
#[derive(Debug, Default)]
struct Pending {
    runs: Vec<Captured>,
    /// Cells linked in the previous frame and not now: printed again, plain.
    unlink: Vec<(u16, u16, Cell)>,
}

#[derive(Debug, Default)]
struct State {
    pending: Option<Pending>,
    /// The runs on the screen (as of the last flush).
    shown: Vec<Captured>,
}

/// The link table shared by the drawing code and its [`LinkBackend`].
#[derive(Debug, Clone, Default)]
pub struct Links(Arc<Mutex<State>>);

/// The cells of row `y` that cover columns `from..to`, each cell once: a wide character
/// reaching into the range from the left is included whole, trailing halves are skipped.
fn row_cells(buffer: &Buffer, y: u16, from: u16, to: u16) -> Vec<(u16, Cell)> {
    let area = buffer.area;
    let mut out = Vec::new();
    if y < area.y || y >= area.bottom() {
        return out;
    }
    let to = to.min(area.right());
    let mut x = area.x;
    while x < to {
        let cell = &buffer[(x, y)];
        let width = cell.cell_width().max(1);
        #[allow(deprecated)] // `skip` is what ratatui's own diff still honours
        let skipped = cell.skip;
        if x + width > from && !skipped {
            out.push((x, cell.clone()));
        }
        x = x.saturating_add(width);
    }
    out
}

impl Links {
    /// Records the frame's runs against the rendered `buffer`; the next flush of the
    /// [`LinkBackend`] sharing this table writes them. Call it after every widget was drawn.
    pub fn capture(&self, buffer: &Buffer, runs: &[Run]) {
        let Ok(mut state) = self.0.lock() else { return };
        let runs: Vec<Captured> = runs
            .iter()
            .filter(|run| run.width > 0)
            .map(|run| Captured {
                run: run.clone(),
                cells: row_cells(buffer, run.y, run.x, run.x.saturating_add(run.width)),
            })
            .filter(|c| !c.cells.is_empty())
            .collect();
        let covered = |x: u16, y: u16| {
            runs.iter()
                .any(|c| c.run.y == y && c.run.x <= x && x < c.run.x + c.run.width)
        };
        let mut unlink: Vec<(u16, u16, Cell)> = Vec::new();
        for old in &state.shown {
            let y = old.run.y;
            let mut x = old.run.x;
            let end = old.run.x + old.run.width;
            while x < end {
                if covered(x, y) {
                    x += 1;
                    continue;
                }
                let start = x;
                while x < end && !covered(x, y) {
                    x += 1;
                }
                unlink.extend(
                    row_cells(buffer, y, start, x)
                        .into_iter()
                        .map(|(cx, cell)| (cx, y, cell)),
                );
            }
        }
        state.pending = Some(Pending { runs, unlink });
    }

    /// The runs currently on the screen (for tests and diagnostics).
    pub fn shown(&self) -> Vec<Run> {
        self.0
            .lock()
            .map(|s| s.shown.iter().map(|c| c.run.clone()).collect())
            .unwrap_or_default()
    }
}

/// A backend that adds the frame's hyperlinks (see the module docs) to what ratatui writes.
/// Without a captured link table it passes everything through unchanged.
pub struct LinkBackend<B> {
    inner: B,
    links: Links,
}

impl<B> LinkBackend<B> {
    pub fn new(inner: B, links: Links) -> Self {
        Self { inner, links }
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }
}

impl<B: Backend> Backend for LinkBackend<B> {
    type Error = B::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let Ok(mut state) = self.links.0.lock() else {
            return self.inner.draw(content);
        };
        let Some(pending) = state.pending.take() else {
            drop(state);
            return self.inner.draw(content);
        };
        // Every cell to write, in screen order, with the run it belongs to.
        let mut cells: BTreeMap<(u16, u16), (Cell, Option<usize>)> = BTreeMap::new();
        for (x, y, cell) in content {
            cells.insert((y, x), (cell.clone(), None));
        }
        for (x, y, cell) in pending.unlink {
            cells.entry((y, x)).or_insert((cell, None));
        }
        for (i, captured) in pending.runs.iter().enumerate() {
            let y = captured.run.y;
            let touched = captured.cells.iter().any(|(x, _)| cells.contains_key(&(y, *x)));
            // A run ratatui's diff wrote into (after a clear or a resize it writes every
            // cell) lost its link there: send it whole.
            if touched || !state.shown.contains(captured) {
                for (x, cell) in &captured.cells {
                    cells.insert((y, *x), (cell.clone(), Some(i)));
                }
            }
        }
        let mut out: Vec<(u16, u16, Cell)> = Vec::with_capacity(cells.len());
        let mut previous: Option<usize> = None;
        for ((y, x), (mut cell, run)) in cells {
            if run != previous {
                if previous.is_some()
                    && let Some((_, _, last)) = out.last_mut()
                {
                    let symbol = format!("{}{CLOSE}", last.symbol());
                    last.set_symbol(&symbol);
                }
                if let Some(i) = run {
                    let symbol = format!("{}{}", open(&pending.runs[i].run.url), cell.symbol());
                    cell.set_symbol(&symbol);
                }
                previous = run;
            }
            out.push((x, y, cell));
        }
        if previous.is_some()
            && let Some((_, _, last)) = out.last_mut()
        {
            let symbol = format!("{}{CLOSE}", last.symbol());
            last.set_symbol(&symbol);
        }
        state.shown = pending.runs;
        drop(state);
        self.inner.draw(out.iter().map(|(x, y, cell)| (*x, *y, cell)))
    }

    fn append_lines(&mut self, n: u16) -> Result<(), Self::Error> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }

    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use std::collections::HashMap;

    /// A backend that keeps the symbols of the cells each draw was given.
    struct Recorder {
        size: Size,
        sent: Vec<(u16, u16, String)>,
    }

    impl Backend for Recorder {
        type Error = std::io::Error;

        fn draw<'a, I>(&mut self, content: I) -> std::io::Result<()>
        where
            I: Iterator<Item = (u16, u16, &'a Cell)>,
        {
            self.sent.extend(content.map(|(x, y, c)| (x, y, c.symbol().to_owned())));
            Ok(())
        }

        fn hide_cursor(&mut self) -> std::io::Result<()> {
            Ok(())
        }

        fn show_cursor(&mut self) -> std::io::Result<()> {
            Ok(())
        }

        fn get_cursor_position(&mut self) -> std::io::Result<Position> {
            Ok(Position::ORIGIN)
        }

        fn set_cursor_position<P: Into<Position>>(&mut self, _: P) -> std::io::Result<()> {
            Ok(())
        }

        fn clear(&mut self) -> std::io::Result<()> {
            Ok(())
        }

        fn clear_region(&mut self, _: ClearType) -> std::io::Result<()> {
            Ok(())
        }

        fn size(&self) -> std::io::Result<Size> {
            Ok(self.size)
        }

        fn window_size(&mut self) -> std::io::Result<WindowSize> {
            Ok(WindowSize {
                columns_rows: self.size,
                pixels: Size::new(0, 0),
            })
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn only_web_and_mail_links_are_clickable_and_nothing_can_end_the_sequence() {
        assert_eq!(
            clickable("https://x.example/a?b=1#c").as_deref(),
            Some("https://x.example/a?b=1#c")
        );
        assert_eq!(clickable("HTTP://X.example").as_deref(), Some("HTTP://X.example"));
        assert_eq!(clickable("mailto:a@b.example").as_deref(), Some("mailto:a@b.example"));
        for refused in [
            "javascript:alert(1)",
            "JavaScript://x.example/%0aalert(1)",
            "file:///etc/passwd",
            "data:text/html,<b>x</b>",
            "ssh://host",
            "src/main.rs",
            "https:",
            "https://",
            "mailto:",
            "",
            "ht tp://x",
            ":https://x",
        ] {
            assert_eq!(clickable(refused), None, "{refused:?}");
        }
        // ESC, BEL, C1 controls (UTF-8 encoded), spaces and non-ASCII are percent-encoded.
        let hostile = "https://x.example/\x1b]52;c;SGVsbG8=\x07\u{9c}\u{9b}31m a\u{7f}é";
        let safe = clickable(hostile).expect("an https link");
        assert_eq!(
            safe,
            "https://x.example/%1B]52;c;SGVsbG8=%07%C2%9C%C2%9B31m%20a%7F%C3%A9"
        );
        assert!(safe.bytes().all(|b| (0x21..0x7f).contains(&b)), "{safe:?}");
        // Long addresses stay text.
        let long = format!("https://x.example/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(clickable(&long), None);
        let fits = format!("https://x.example/{}", "a".repeat(MAX_URL_BYTES - 18));
        assert_eq!(clickable(&fits).map(|u| u.len()), Some(MAX_URL_BYTES));
        // Encoding counts: 700 bytes of 'é' are 2,800 once encoded.
        assert_eq!(clickable(&format!("https://x.example/{}", "é".repeat(350))), None);
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn auto_turns_links_on_only_for_terminals_known_to_support_them() {
        let no_tmux = || -> Option<String> { panic!("tmux asked outside tmux") };
        for known in [
            vec![("TERM", "xterm-kitty")],
            vec![("TERM", "xterm-256color"), ("KITTY_WINDOW_ID", "1")],
            vec![("TERM", "xterm-256color"), ("WT_SESSION", "abc")],
            vec![("TERM", "xterm-256color"), ("TERM_PROGRAM", "iTerm.app")],
            vec![("TERM", "xterm-256color"), ("TERM_PROGRAM", "WezTerm")],
            vec![("TERM", "xterm-256color"), ("TERM_PROGRAM", "vscode")],
            vec![("TERM", "xterm-256color"), ("VTE_VERSION", "7600")],
            vec![("TERM", "xterm-256color"), ("KONSOLE_VERSION", "230804")],
            vec![("TERM", "alacritty")],
            vec![("TERM", "foot")],
            vec![("TERM", "xterm-ghostty")],
        ] {
            assert!(terminal_supports(env(&known), no_tmux), "{known:?}");
        }
        for unknown in [
            vec![],
            vec![("TERM", "xterm-256color")],
            vec![("TERM", "linux")],
            vec![("TERM", "dumb"), ("TERM_PROGRAM", "iTerm.app")],
            vec![("TERM", "xterm-256color"), ("VTE_VERSION", "4803")],
            vec![("TERM", "xterm-256color"), ("KONSOLE_VERSION", "201100")],
            vec![("TERM", "xterm-256color"), ("TERM_PROGRAM", "Apple_Terminal")],
            vec![("TERM", "screen-256color"), ("STY", "1.pts-0")],
        ] {
            assert!(!terminal_supports(env(&unknown), no_tmux), "{unknown:?}");
        }
        // Under tmux the outer terminal's variables do not count: only tmux's own answer.
        let tmux = [
            ("TERM", "tmux-256color"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("KITTY_WINDOW_ID", "1"),
        ];
        assert!(terminal_supports(env(&tmux), || Some(
            "256,RGB,title,hyperlinks,usstyle".into()
        )));
        assert!(!terminal_supports(env(&tmux), || Some("256,RGB,title".into())));
        assert!(!terminal_supports(env(&tmux), || None), "tmux before 3.4, or no answer");
        // The setting: on and off do not look at the terminal.
        let dumb = env(&[("TERM", "dumb")]);
        assert!(Setting::On.enabled(&dumb, no_tmux));
        assert!(!Setting::Off.enabled(env(&[("TERM", "xterm-kitty")]), no_tmux));
        assert!(Setting::Auto.enabled(env(&[("TERM", "xterm-kitty")]), no_tmux));
        assert_eq!(Setting::parse("auto"), Some(Setting::Auto));
        assert_eq!(Setting::parse("yes"), None);
        for name in crate::config::HYPERLINK_SETTINGS {
            assert!(Setting::parse(name).is_some(), "{name}");
        }
    }

    fn run(x: u16, y: u16, width: u16, url: &str) -> Run {
        Run {
            x,
            y,
            width,
            url: Arc::from(url),
        }
    }

    #[test]
    fn covering_cuts_runs_around_a_rect() {
        let mut runs = vec![run(0, 1, 10, "a"), run(2, 5, 4, "b"), run(0, 9, 3, "c")];
        cover(&mut runs, Rect::new(3, 0, 4, 6));
        assert_eq!(
            runs,
            [
                run(0, 1, 3, "a"),
                run(7, 1, 3, "a"),
                run(2, 5, 1, "b"),
                run(0, 9, 3, "c")
            ]
        );
    }

    /// Draws `text` on row 0 with a link over `link` columns (if any) and returns the
    /// symbols the wrapped backend received, as one string per cell it was given.
    fn frame(
        terminal: &mut Terminal<LinkBackend<Recorder>>,
        links: &Links,
        text: &str,
        link: Option<(u16, u16)>,
    ) -> Vec<String> {
        let runs: Vec<Run> = link
            .into_iter()
            .map(|(x, w)| run(x, 0, w, "https://l.example"))
            .collect();
        terminal
            .draw(|frame| {
                frame.buffer_mut().set_string(0, 0, text, ratatui::style::Style::new());
                links.capture(frame.buffer_mut(), &runs);
            })
            .expect("draw");
        std::mem::take(&mut terminal.backend_mut().inner_mut().sent)
            .into_iter()
            .map(|(_, _, symbol)| symbol)
            .filter(|s| s.contains('\x1b'))
            .collect()
    }

    #[test]
    fn runs_are_sent_when_new_moved_or_touched_by_the_diff_and_unlinked_when_gone() {
        let links = Links::default();
        let recorder = Recorder {
            size: Size::new(20, 2),
            sent: Vec::new(),
        };
        let mut terminal = Terminal::new(LinkBackend::new(recorder, links.clone())).expect("terminal");
        // New: opened before its first cell, closed after its last; a wide character
        // is one cell (its trailing half is not sent).
        let sent = frame(&mut terminal, &links, "a 日本 b", Some((2, 4)));
        assert_eq!(sent, ["\x1b]8;;https://l.example\x1b\\日", "本\x1b]8;;\x1b\\"]);
        assert_eq!(links.shown(), [run(2, 0, 4, "https://l.example")]);
        // Unchanged: nothing sent again.
        assert!(frame(&mut terminal, &links, "a 日本 b", Some((2, 4))).is_empty());
        // After a clear the screen is blank: sent again.
        terminal.clear().expect("clear");
        assert_eq!(frame(&mut terminal, &links, "a 日本 b", Some((2, 4))).len(), 2);
        // Moved: sent at its new place (the old cells are printed again, unlinked).
        let runs = [run(0, 0, 1, "https://l.example")];
        terminal
            .draw(|frame| {
                frame
                    .buffer_mut()
                    .set_string(0, 0, "a 日本 b", ratatui::style::Style::new());
                links.capture(frame.buffer_mut(), &runs);
            })
            .expect("draw");
        let sent = std::mem::take(&mut terminal.backend_mut().inner_mut().sent);
        let symbols: Vec<&str> = sent.iter().map(|(_, _, s)| s.as_str()).collect();
        assert_eq!(
            symbols,
            ["\x1b]8;;https://l.example\x1b\\a\x1b]8;;\x1b\\", "日", "本"],
            "the old run's cells are printed again without a link"
        );
        // Gone: nothing linked, and the run is no longer on the screen.
        assert!(frame(&mut terminal, &links, "a 日本 b", None).is_empty());
        assert!(links.shown().is_empty());
        // Touched by ratatui's own diff (which rewrites a cell it thinks changed, e.g. the
        // trailing columns of a replaced wide character): the whole run is sent again.
        frame(&mut terminal, &links, "a 日本 b", Some((2, 4)));
        let mut buffer = Buffer::empty(Rect::new(0, 0, 20, 2));
        buffer.set_string(0, 0, "a 日本 b", ratatui::style::Style::new());
        links.capture(&buffer, &[run(2, 0, 4, "https://l.example")]);
        let backend = terminal.backend_mut();
        backend.draw([(4, 0, &buffer[(4, 0)])].into_iter()).expect("draw");
        let sent: Vec<String> = std::mem::take(&mut backend.inner_mut().sent)
            .into_iter()
            .map(|(_, _, s)| s)
            .collect();
        assert_eq!(sent, ["\x1b]8;;https://l.example\x1b\\日", "本\x1b]8;;\x1b\\"]);
    }
}
