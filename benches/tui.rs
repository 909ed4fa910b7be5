//! TUI rendering on ratatui's TestBackend:
//! - a 10,000-message transcript: redraw after a keystroke (target ≤ 4 ms) and resident
//!   memory (target ≤ 150 MB);
//! - streaming 2,000 tokens/s into the transcript, drawing at 60 frames/s: frame time
//!   (apply the frame's deltas + draw) stays under 16 ms.
//!
//! - `@` file completion over 100,000 files: a keystroke (match + redraw) ≤ 10 ms.
//! - the first two again with hyperlinks on: a link in every answer, drawn through the real
//!   output path (the hyperlink backend over crossterm, writing to a sink).
//!
//! Run: `cargo bench --bench tui`.

use std::time::{Duration, Instant};

use brute::protocol::{Display, Event, ToolResult, TurnOutcome};
use brute::tui::app::{App, SessionInfo};
use brute::tui::view;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn stats(name: &str, mut times: Vec<Duration>, target_ms: f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    println!(
        "{name:<44} median {:6.3} ms   p99 {:6.3} ms   max {:6.3} ms   (target ≤ {target_ms} ms)",
        ms(times[times.len() / 2]),
        ms(p99),
        ms(times[times.len() - 1])
    );
}

fn session() -> SessionInfo {
    SessionInfo {
        sandbox: brute::permission::Mode::WorkspaceWrite,
        base_url: "http://127.0.0.1:1/v1".into(),
        session_id: None,
        effort: None,
        provider: "openai".into(),
        model: "bench".into(),
        cwd: "~/project".into(),
    }
}

fn big_transcript() -> App {
    transcript(false)
}

/// The 10,000-entry transcript; with `links`, every answer also has two links.
fn transcript(links: bool) -> App {
    let mut app = App::new(session(), Vec::new(), Vec::new());
    for i in 0..3334 {
        let link = if links {
            format!("See [the docs](https://docs.example/{i}) and <https://x.example/{i}>.\n\n")
        } else {
            String::new()
        };
        app.on_key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        app.on_event(Event::TurnStarted { prompt: "q".into() });
        app.on_event(Event::TextDelta {
            text: format!("{link}Step {i}: I will **read** `src/file{i}.rs` and then:\n\n- check it\n- fix it\n\n```rust\nfn f{i}() -> u32 {{ {i} }}\n```\n"),
        });
        let id = format!("c{i}");
        app.on_event(Event::ToolCallStarted {
            call_id: id.clone(),
            name: "read".into(),
            arguments: json!({"file_path": format!("src/file{i}.rs")}),
            summary: format!("src/file{i}.rs"),
            display: Display::Text,
        });
        app.on_event(Event::ToolResult(ToolResult {
            call_id: id,
            name: "read".into(),
            content: (1..=30).map(|n| format!("{n}\tlet x{n} = {n};\n")).collect(),
            is_error: false,
            duration_ms: 3,
            display: Display::Text,
            images: Vec::new(),
            failure: None,
        }));
        app.on_event(Event::TurnFinished {
            outcome: TurnOutcome::Done,
            text: String::new(),
        });
    }
    app
}

fn main() {
    let before = rss_mb();
    let mut app = big_transcript();
    assert!(app.entries.len() >= 10_000, "{} entries", app.entries.len());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let started = Instant::now();
    terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
    println!(
        "first draw of {} transcript entries: {:.2} ms",
        app.entries.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    let mut times = Vec::new();
    for i in 0..300 {
        let c = char::from(b'a' + (i % 26) as u8);
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
        times.push(t.elapsed());
    }
    stats("keystroke redraw, 10,000-entry transcript", times, 4.0);
    // Scrolled back: the whole history gets wrapped once, then it is cached too.
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE));
        terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
        times.push(t.elapsed());
    }
    stats("PgUp redraw, 10,000-entry transcript", times, 16.0);
    println!(
        "resident memory: {:.1} MB (process), {:.1} MB added by the transcript (target ≤ 150 MB)",
        rss_mb(),
        rss_mb() - before
    );

    // Streaming: 2,000 tokens/s at 60 frames/s is about 34 tokens per frame, 10 s of output.
    let mut app = App::new(session(), Vec::new(), Vec::new());
    app.on_event(Event::TurnStarted { prompt: String::new() });
    let words = [
        "The ",
        "parser ",
        "reads ",
        "`config` ",
        "and ",
        "**fails** ",
        "when ",
        "a ",
        "key ",
        "is ",
        "missing.\n\n",
    ];
    let mut times = Vec::new();
    let mut token = 0;
    for frame in 0..600 {
        let t = Instant::now();
        for _ in 0..34 {
            app.on_event(Event::TextDelta {
                text: words[token % words.len()].to_owned(),
            });
            token += 1;
        }
        if frame % 60 == 0 {
            app.on_event(Event::TextDelta {
                text: "\n```rust\nfn main() { println!(\"hi\"); }\n```\n".into(),
            });
        }
        app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
        terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
        times.push(t.elapsed());
    }
    stats("frame while streaming 2,000 tokens/s + typing", times, 16.0);

    // `@` completion over 100,000 paths: typing a query, then deleting it and typing another.
    let files: Vec<String> = (0..100_000)
        .map(|i| {
            format!(
                "{}/module_{}/sub{}/file_{i}.{}",
                ["src", "tests", "crates/core/src", "docs", "vendor/lib"][i % 5],
                i % 97,
                i % 13,
                ["rs", "md", "toml", "json"][i % 4]
            )
        })
        .collect();
    let mut app = App::new(session(), Vec::new(), files);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
    let mut times = Vec::new();
    for round in 0..10 {
        let query = ["@mod42sub7rs", "@testsfile_9", "@docsmd", "@vendorlib1", "@coresrcmod"][round % 5];
        for c in query.chars() {
            let t = Instant::now();
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
            terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
            times.push(t.elapsed());
        }
        assert!(app.popup.is_some(), "{query} matched nothing");
        for _ in query.chars() {
            let t = Instant::now();
            app.on_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
            terminal.draw(|f| view::draw(f, &mut app)).expect("draw");
            times.push(t.elapsed());
        }
    }
    stats("`@` completion keystroke, 100,000 files", times, 10.0);
    with_links();
}

/// Keystroke redraw and streaming with hyperlinks on, through the hyperlink backend over
/// crossterm (its bytes go to a sink).
fn with_links() {
    use brute::tui::hyperlink::{LinkBackend, Links};
    use ratatui::layout::Rect;
    use ratatui::{TerminalOptions, Viewport};
    let links = Links::default();
    let backend = LinkBackend::new(ratatui::backend::CrosstermBackend::new(std::io::sink()), links.clone());
    let options = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, 120, 40)),
    };
    let mut terminal = Terminal::with_options(backend, options).expect("terminal");
    let mut app = transcript(true);
    app.hyperlinks = true;
    brute::tui::draw_frame(&mut terminal, &links, &mut app).expect("draw");
    assert!(!links.shown().is_empty(), "links on the screen");
    let mut times = Vec::new();
    for i in 0..300 {
        let c = char::from(b'a' + (i % 26) as u8);
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        brute::tui::draw_frame(&mut terminal, &links, &mut app).expect("draw");
        times.push(t.elapsed());
    }
    stats("keystroke redraw, 10,000 entries, links on", times, 4.0);
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE));
        brute::tui::draw_frame(&mut terminal, &links, &mut app).expect("draw");
        times.push(t.elapsed());
    }
    stats("PgUp redraw (links move), links on", times, 16.0);

    // The streaming workload above (a link in every paragraph's place of `config`), then one
    // with two links in every paragraph.
    let plain = [
        "The ",
        "parser ",
        "reads ",
        "[`config`](https://docs.example/config) ",
        "and ",
        "**fails** ",
        "when ",
        "a ",
        "key ",
        "is ",
        "missing.\n\n",
    ];
    stream_with_links(
        &mut terminal,
        &links,
        &plain,
        true,
        "frame while streaming + typing, links on",
    );
    let dense = [
        "The ",
        "[parser](https://docs.example/parser) ",
        "reads ",
        "<https://x.example/config> ",
        "and ",
        "**fails**.\n\n",
    ];
    stream_with_links(
        &mut terminal,
        &links,
        &dense,
        true,
        "frame, streaming 2 links a paragraph, links on",
    );
    stream_with_links(&mut terminal, &links, &dense, false, "the same, links off");
}

/// Streams `words` at 34 tokens a frame for 600 frames, typing a key each frame, with
/// hyperlinks `on` or off.
fn stream_with_links(
    terminal: &mut Terminal<brute::tui::hyperlink::LinkBackend<ratatui::backend::CrosstermBackend<std::io::Sink>>>,
    links: &brute::tui::hyperlink::Links,
    words: &[&str],
    on: bool,
    name: &str,
) {
    let mut app = App::new(session(), Vec::new(), Vec::new());
    app.hyperlinks = on;
    app.on_event(Event::TurnStarted { prompt: String::new() });
    let mut times = Vec::new();
    let mut token = 0;
    for _ in 0..600 {
        let t = Instant::now();
        for _ in 0..34 {
            app.on_event(Event::TextDelta {
                text: words[token % words.len()].to_owned(),
            });
            token += 1;
        }
        app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
        brute::tui::draw_frame(terminal, links, &mut app).expect("draw");
        times.push(t.elapsed());
    }
    stats(name, times, 16.0);
}
