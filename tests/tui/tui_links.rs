//! OSC 8 hyperlinks through the real output path: the UI drawn by `brute::tui::draw_frame`
//! into ratatui's crossterm backend (writing to a byte buffer) behind the hyperlink wrapper,
//! and those bytes read back by a terminal model: vt100 for the screen and the cursor, plus
//! what vt100 0.16 does not do, a link attribute per cell (a terminal gives each printed
//! cell the link open at that moment, and keeps it until the cell is printed again).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;

use brute::protocol::{Event, TurnOutcome};
use brute::tui::app::{App, SessionInfo};
use brute::tui::hyperlink::{LinkBackend, Links};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

const W: u16 = 80;
const H: u16 = 24;

fn app(hyperlinks: bool) -> App {
    let session = SessionInfo {
        sandbox: brute::permission::Mode::WorkspaceWrite,
        base_url: "http://127.0.0.1:1/v1".into(),
        session_id: None,
        effort: None,
        provider: "openai".into(),
        model: "gpt-test".into(),
        cwd: "~/project".into(),
    };
    let mut app = App::new(session, Vec::new(), Vec::new());
    app.hyperlinks = hyperlinks;
    app
}

fn answer(app: &mut App, prompt: &str, text: &str) {
    app.on_event(Event::TurnStarted { prompt: prompt.into() });
    app.on_event(Event::TextDelta { text: text.into() });
    app.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Done,
        text: text.into(),
    });
}

/// A terminal: vt100's screen plus the link of every cell.
struct Model {
    vt: vt100::Parser,
    links: BTreeMap<(u16, u16), String>,
    open: Option<String>,
    /// Every OSC sequence seen (the bytes between `ESC ]` and the terminator).
    oscs: Vec<Vec<u8>>,
}

impl Model {
    fn new() -> Self {
        Self {
            vt: vt100::Parser::new(H, W, 0),
            links: BTreeMap::new(),
            open: None,
            oscs: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == 0x1b {
                let end = match bytes.get(i + 1) {
                    Some(b'[') => {
                        let mut j = i + 2;
                        while j < bytes.len() && !(0x40..=0x7e).contains(&bytes[j]) {
                            j += 1;
                        }
                        j + 1
                    }
                    Some(b']') => {
                        let mut j = i + 2;
                        loop {
                            assert!(j < bytes.len(), "an OSC sequence without its end: {:?}", &bytes[i..]);
                            if bytes[j] == 0x07 {
                                break j + 1;
                            }
                            if bytes[j] == 0x1b && bytes.get(j + 1) == Some(&b'\\') {
                                break j + 2;
                            }
                            j += 1;
                        }
                    }
                    _ => i + 2,
                };
                let sequence = &bytes[i..end.min(bytes.len())];
                if let Some(body) = sequence.strip_prefix(b"\x1b]") {
                    let body = body
                        .strip_suffix(b"\x1b\\")
                        .or_else(|| body.strip_suffix(b"\x07"))
                        .unwrap_or(body);
                    self.oscs.push(body.to_vec());
                    if let Some(rest) = body.strip_prefix(b"8;") {
                        let (_params, url) = rest.split_at(rest.iter().position(|b| *b == b';').expect("OSC 8 params"));
                        let url = String::from_utf8(url[1..].to_vec()).expect("a UTF-8 address");
                        self.open = (!url.is_empty()).then_some(url);
                    }
                }
                if sequence == b"\x1b[2J" {
                    self.links.clear();
                }
                self.vt.process(sequence);
                i = end;
                continue;
            }
            let len = match bytes[i] {
                b if b < 0x80 => 1,
                b if b >= 0xf0 => 4,
                b if b >= 0xe0 => 3,
                _ => 2,
            };
            let (row, col) = self.vt.screen().cursor_position();
            self.vt.process(&bytes[i..i + len]);
            let (after_row, after_col) = self.vt.screen().cursor_position();
            let cols: Vec<u16> = if after_row == row && after_col > col {
                (col..after_col).collect()
            } else if (after_row, after_col) == (row, col) && bytes[i] >= 0x20 {
                // Printed in the last column (the wrap is pending), unless it was a
                // combining mark: then the cell before took it.
                let wide = self.vt.screen().cell(row, col).is_some_and(|c| c.is_wide());
                if self.vt.screen().cell(row, col).is_some_and(|c| c.has_contents()) {
                    if wide { vec![col, col + 1] } else { vec![col] }
                } else {
                    Vec::new()
                }
            } else {
                Vec::new()
            };
            for c in cols {
                match &self.open {
                    Some(url) => self.links.insert((row, c), url.clone()),
                    None => self.links.remove(&(row, c)),
                };
            }
            i += len;
        }
    }

    fn row(&self, row: u16) -> String {
        (0..W)
            .map(|c| {
                self.vt.screen().cell(row, c).map_or(" ".to_owned(), |cell| {
                    if cell.has_contents() {
                        cell.contents().to_owned()
                    } else {
                        " ".to_owned()
                    }
                })
            })
            .collect()
    }

    /// The text of the cells linked to `url`, row by row.
    fn linked(&self, url: &str) -> Vec<String> {
        let mut rows: BTreeMap<u16, String> = BTreeMap::new();
        for ((row, col), u) in &self.links {
            if u == url
                && let Some(cell) = self.vt.screen().cell(*row, *col)
                && !cell.is_wide_continuation()
            {
                rows.entry(*row).or_default().push_str(cell.contents());
            }
        }
        rows.into_values().collect()
    }
}

/// Where the backend writes; the test takes each frame's bytes from it.
#[derive(Clone, Default)]
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Ui {
    terminal: Terminal<LinkBackend<CrosstermBackend<Sink>>>,
    sink: Sink,
    links: Links,
    model: Model,
    /// The bytes of the last frame.
    last: Vec<u8>,
}

impl Ui {
    fn new() -> Self {
        let links = Links::default();
        let sink = Sink::default();
        let backend = LinkBackend::new(CrosstermBackend::new(sink.clone()), links.clone());
        let terminal = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Fixed(Rect::new(0, 0, W, H)),
            },
        )
        .expect("terminal");
        Self {
            terminal,
            sink,
            links,
            model: Model::new(),
            last: Vec::new(),
        }
    }

    fn draw(&mut self, app: &mut App) {
        brute::tui::draw_frame(&mut self.terminal, &self.links, app).expect("draw");
        let bytes = std::mem::take(&mut *self.sink.0.borrow_mut());
        self.model.feed(&bytes);
        self.last = bytes;
    }

    fn screen(&self) -> String {
        self.model.vt.screen().contents()
    }

    fn cursor(&self) -> (u16, u16) {
        self.model.vt.screen().cursor_position()
    }
}

const ANSWER: &str = "See [the docs](https://docs.example/guide?a=1&b=2) and <https://auto.example/x>.\n\n\
Wide: [日本語 🎉 cafe\u{301}](https://wide.example/) ok.\n\n\
Refused: [run me](javascript:alert(1)), [a file](file:///etc/passwd), [relative](src/main.rs).\n\n\
Spaced: [space](<https://space.example/a b>) and [unicode](https://例え.jp/パス).\n\n\
| name | link |\n|---|---|\n| one | [cell](https://table.example/1) |\n";

/// Links come out as OSC 8 around exactly their text and dim address, refused schemes and
/// relative links stay plain, and the screen and the cursor are what they are without links.
#[test]
fn links_render_as_osc8_around_their_cells_and_change_nothing_else() {
    let mut on = app(true);
    answer(&mut on, "where are the docs?", ANSWER);
    let mut ui = Ui::new();
    ui.draw(&mut on);
    let raw = String::from_utf8_lossy(&ui.last).into_owned();

    assert!(
        raw.contains("\x1b]8;;https://docs.example/guide?a=1&b=2\x1b\\"),
        "{raw:?}"
    );
    assert_eq!(
        ui.model.linked("https://docs.example/guide?a=1&b=2"),
        ["the docs (https://docs.example/guide?a=1&b=2)"]
    );
    assert_eq!(ui.model.linked("https://auto.example/x"), ["https://auto.example/x"]);
    assert_eq!(
        ui.model.linked("https://wide.example/"),
        ["日本語 🎉 cafe\u{301} (https://wide.example/)"]
    );
    assert_eq!(
        ui.model.linked("https://table.example/1"),
        ["cell (https://table.example/1)"]
    );
    // Bytes outside printable ASCII are percent-encoded in the sequence (the text is as written).
    assert_eq!(
        ui.model.linked("https://space.example/a%20b"),
        ["space (https://space.example/a b)"]
    );
    let unicode = "https://%E4%BE%8B%E3%81%88.jp/%E3%83%91%E3%82%B9";
    assert_eq!(ui.model.linked(unicode), ["unicode (https://例え.jp/パス)"]);
    for refused in ["javascript", "file:", "src/main.rs"] {
        assert!(
            !ui.model
                .oscs
                .iter()
                .any(|o| String::from_utf8_lossy(o).contains(refused)),
            "{refused} became a link"
        );
    }
    assert!(ui.screen().contains("run me (javascript:alert(1))"), "{}", ui.screen());
    // Every OSC written is an OSC 8 with a printable-ASCII address.
    for osc in &ui.model.oscs {
        assert!(osc.starts_with(b"8;;"), "{:?}", String::from_utf8_lossy(osc));
        assert!(osc.iter().all(|b| (0x20..0x7f).contains(b)), "{osc:?}");
    }
    // Every link is closed again: nothing printed after the frame is linked.
    assert_eq!(ui.model.open, None);

    let mut off = app(false);
    answer(&mut off, "where are the docs?", ANSWER);
    let mut plain = Ui::new();
    plain.draw(&mut off);
    assert!(!plain.last.windows(4).any(|w| w == b"\x1b]8;"), "no OSC 8 when off");
    assert_eq!(ui.screen(), plain.screen(), "links change no cell");
    assert_eq!(ui.cursor(), plain.cursor(), "the cursor is where ratatui put it");
    assert_eq!(
        ui.model.vt.screen().contents_formatted(),
        plain.model.vt.screen().contents_formatted(),
        "nor any style"
    );
    // Typing redraws the composer, not the links (they are still on the screen).
    on.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    ui.draw(&mut on);
    assert!(
        !ui.last.windows(4).any(|w| w == b"\x1b]8;"),
        "{:?}",
        String::from_utf8_lossy(&ui.last)
    );
    assert_eq!(ui.model.linked("https://auto.example/x"), ["https://auto.example/x"]);
    off.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    plain.draw(&mut off);
    assert_eq!(ui.cursor(), plain.cursor(), "the cursor follows the composer");
}

/// The linked cells are exactly the cells of the links on the screen, frame after frame,
/// while the transcript scrolls them up, off the top, back, and while new answers push them
/// up. Each answer has a link and below it a refused link of the same text and style: when
/// the refused one scrolls to where the clickable one was, ratatui's diff sees unchanged
/// cells, and only the unlinking pass keeps them from staying clickable.
#[test]
fn scrolling_moves_links_and_leaves_no_stale_ones() {
    let mut a = app(true);
    let mut ui = Ui::new();
    let url = |n: usize| format!("https://e.example/{n:02}");
    let check = |ui: &Ui, step: &str| {
        let mut expected: BTreeMap<(u16, u16), String> = BTreeMap::new();
        for row in 0..H {
            let text = ui.model.row(row);
            let mut from = 0;
            while let Some(at) = text[from..].find("same (https://e.example/") {
                let start = from + at;
                let shown = &text[start..(start + "same (https://e.example/00)".len()).min(text.len())];
                let address = shown.trim_start_matches("same (").trim_end_matches(')');
                for col in start..start + shown.len() {
                    expected.insert((row, col as u16), address.to_owned());
                }
                from = start + shown.len();
            }
        }
        assert_eq!(ui.model.links, expected, "{step}:\n{}", ui.screen());
    };
    let text = |n: usize| {
        format!(
            "Answer {n}:\n\n[same]({})\n\n[same](javascript:void)\n\nline one\n\nline two",
            url(n)
        )
    };
    for n in 0..6 {
        answer(&mut a, &format!("question {n}"), &text(n));
        ui.draw(&mut a);
        check(&ui, &format!("answer {n}"));
    }
    assert!(!ui.model.links.is_empty(), "some links are on the screen");
    for step in 0..40 {
        a.scroll_by(1);
        ui.draw(&mut a);
        check(&ui, &format!("up {step}"));
    }
    for step in 0..45 {
        a.scroll_by(-1);
        ui.draw(&mut a);
        check(&ui, &format!("down {step}"));
    }
    // A few lines at a time: links jump rows and land where other links were.
    for step in 0..6 {
        a.scroll_by(if step % 2 == 0 { 6 } else { -2 });
        ui.draw(&mut a);
        check(&ui, &format!("jump up {step}"));
    }
    // New output while scrolled up keeps the view; at the bottom it pushes links up.
    answer(&mut a, "more", &text(6));
    ui.draw(&mut a);
    check(&ui, "late answer while scrolled");
    a.scroll_by(-1000);
    ui.draw(&mut a);
    check(&ui, "back at the bottom");
    assert_eq!(ui.model.linked(&url(6)), [format!("same ({})", url(6))]);
}

/// A question dialog drawn over links: no cell of the dialog is linked, and what stays
/// linked beside it is (part of) a link's own text.
#[test]
fn a_dialog_over_links_leaves_its_cells_unlinked() {
    use brute::protocol::{Question, QuestionOption, RequestKind};
    let mut a = app(true);
    let mut ui = Ui::new();
    for n in 0..8 {
        answer(
            &mut a,
            &format!("q{n}"),
            &format!("[same](https://e.example/{n:02}) [same](https://e.example/{n:02}) more text\n\nfiller"),
        );
    }
    ui.draw(&mut a);
    let before = ui.model.links.len();
    assert!(before > 0);
    a.on_event(Event::Request {
        id: "q".into(),
        kind: RequestKind::Question {
            questions: vec![Question {
                question: "Which database should the service use?".into(),
                header: None,
                options: ["sqlite", "postgres"]
                    .iter()
                    .map(|l| QuestionOption {
                        label: (*l).into(),
                        description: Some(format!("use {l}")),
                    })
                    .collect(),
                multiple: false,
                default: None,
            }],
        },
    });
    ui.draw(&mut a);
    assert!(ui.screen().contains("Which database"), "{}", ui.screen());
    // Group the linked cells into runs per row and check each run's text.
    let mut runs: Vec<(u16, u16, String, String)> = Vec::new();
    for ((row, col), url) in &ui.model.links {
        let cell = ui
            .model
            .vt
            .screen()
            .cell(*row, *col)
            .map(|c| c.contents().to_owned())
            .unwrap_or_default();
        match runs.last_mut() {
            Some((r, end, u, text)) if r == row && *end == *col && u == url => {
                text.push_str(&cell);
                *end += 1;
            }
            _ => runs.push((*row, col + 1, url.clone(), cell)),
        }
    }
    assert!(!runs.is_empty(), "links beside the dialog stay");
    for (row, _, url, text) in &runs {
        let whole = format!("same ({url})");
        assert!(
            whole.contains(text.as_str()),
            "row {row}: {text:?} linked to {url}:\n{}",
            ui.screen()
        );
    }
    assert!(ui.model.links.len() < before, "the dialog covers some link cells");
}
