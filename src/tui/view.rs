//! Draws the [`App`]: transcript, completion popup, composer, status line, and the question
//! dialog on top. With hyperlinks on it also records where the visible links are
//! (`App::links`, less what a dialog, picker or hint covers) for [`super::hyperlink`].

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::{App, Modal};
use super::hyperlink;
use super::modal_view::{draw_confirm, draw_dialog};
use super::wrap::wrap_flat;

/// Most queued prompts listed above the composer.
const MAX_QUEUED_LINES: usize = 3;

/// Most composer lines shown before it scrolls.
const MAX_COMPOSER_LINES: usize = 8;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    app.links.clear();
    let area = frame.area();
    let composer_width = area.width.saturating_sub(2).max(1);
    let composer_lines = composer_rows(app, composer_width).len().clamp(1, MAX_COMPOSER_LINES);
    let popup_height = app
        .popup
        .as_ref()
        .map_or(0, |p| p.items.len().min(super::app::POPUP_ROWS) as u16);
    let queued_height = app.queued.len().min(MAX_QUEUED_LINES) as u16;
    let [transcript, queued, popup, composer, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(queued_height),
        Constraint::Length(popup_height),
        Constraint::Length(composer_lines as u16 + 2),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_transcript(frame, app, transcript);
    draw_queued(frame, app, queued);
    draw_popup(frame, app, popup);
    draw_composer(frame, app, composer);
    draw_status(frame, app, status);
    // A dialog may cover everything but the status line (the composer waits behind it).
    let dialog_area = Rect::new(area.x, area.y, area.width, area.height.saturating_sub(1));
    let open = app.modals.len();
    let covered = match app.modals.front_mut() {
        Some(Modal::Question { dialog, .. }) => Some(draw_dialog(frame, dialog, open, dialog_area)),
        // Mutable: an approval's payload counts what each draw showed as seen.
        Some(Modal::Confirm(confirm)) => Some(draw_confirm(frame, confirm, open, dialog_area)),
        None => app.picker.as_ref().map(|picker| {
            picker.draw(frame, transcript);
            transcript
        }),
    };
    if let Some(rect) = covered {
        hyperlink::cover(&mut app.links, rect);
    }
}

/// Prompts waiting for the running turn, newest last (Up takes the newest back).
fn draw_queued(frame: &mut Frame<'_>, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let skip = app.queued.len().saturating_sub(MAX_QUEUED_LINES);
    let lines: Vec<Line<'static>> = app
        .queued
        .iter()
        .skip(skip)
        .map(|prompt| {
            let first = prompt.lines().next().unwrap_or("");
            Line::from(vec![
                Span::styled(" queued: ", Style::new().fg(Color::Yellow)),
                Span::styled(super::sanitize::sanitize(first), Style::new().fg(Color::Gray)),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_transcript(frame: &mut Frame<'_>, app: &mut App, area: Rect) {
    let height = usize::from(area.height);
    let width = area.width.max(1);
    let (tick, flags) = (app.tick, app.flags);
    // Scrolled up: keep the same content in view while new output arrives below it.
    // Only the tail is measured: what grew since the last draw is the last entry then and
    // the entries after it (wrapping the whole history on every frame would stall long ones).
    if app.scroll > 0 {
        let count = app.entries.len();
        if let Some((previous_count, previous_last)) = app.scroll_anchor
            && previous_count > 0
            && previous_count <= count
        {
            let grown: usize = app.entries[previous_count - 1..]
                .iter_mut()
                .map(|c| c.wrapped(width, tick, flags).len())
                .sum();
            app.scroll += grown.saturating_sub(previous_last);
        }
        let last = app
            .entries
            .last_mut()
            .map_or(0, |c| c.wrapped(width, tick, flags).len());
        app.scroll_anchor = Some((count, last));
    } else {
        app.scroll_anchor = None;
    }
    // Walk back from the newest entry, collecting only what the viewport (plus the scroll
    // offset) needs; every entry's wrapped lines are cached.
    let need = height + app.scroll;
    let mut collected: Vec<Line<'static>> = Vec::new();
    let mut chunks: Vec<(Vec<Line<'static>>, Vec<super::wrap::Placed>)> = Vec::new();
    let mut total = 0;
    let linking = app.hyperlinks;
    for cached in app.entries.iter_mut().rev() {
        let lines = cached.wrapped(width, tick, flags);
        total += lines.len();
        let lines = lines.to_vec();
        let links = if linking { cached.links().to_vec() } else { Vec::new() };
        chunks.push((lines, links));
        if total >= need {
            break;
        }
    }
    let mut placed = Vec::new();
    for (chunk, links) in chunks.into_iter().rev() {
        let first = collected.len();
        placed.extend(links.into_iter().map(|p| super::wrap::Placed {
            row: p.row + first,
            ..p
        }));
        collected.extend(chunk);
    }
    let max_scroll = collected.len().saturating_sub(height);
    if app.scroll > max_scroll {
        app.scroll = max_scroll;
    }
    let end = collected.len() - app.scroll;
    let start = end.saturating_sub(height);
    let visible: Vec<Line<'static>> = collected[start..end].to_vec();
    frame.render_widget(Paragraph::new(visible), area);
    for link in placed.into_iter().filter(|p| (start..end).contains(&p.row)) {
        let from = link.start.min(usize::from(area.width));
        let to = link.end.min(usize::from(area.width));
        if from < to {
            app.links.push(hyperlink::Run {
                x: area.x + from as u16,
                y: area.y + (link.row - start) as u16,
                width: (to - from) as u16,
                url: link.url,
            });
        }
    }
    if app.scroll > 0 {
        let hint = format!(" ↓ {} more lines (PgDn, Esc) ", app.scroll);
        let w = (hint.chars().count() as u16).min(area.width);
        let at = Rect::new(
            area.x + area.width.saturating_sub(w),
            area.y + area.height.saturating_sub(1),
            w,
            1,
        );
        frame.render_widget(
            Paragraph::new(hint).style(Style::new().fg(Color::Black).bg(Color::Yellow)),
            at,
        );
        hyperlink::cover(&mut app.links, at);
    }
}

fn draw_popup(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(popup) = &app.popup else { return };
    let first = popup.first_shown(usize::from(area.height));
    let lines: Vec<Line<'_>> = popup
        .items
        .iter()
        .enumerate()
        .skip(first)
        .take(usize::from(area.height))
        .map(|(i, (item, help))| {
            let style = if i == popup.selected {
                Style::new().fg(Color::Black).bg(Color::Cyan)
            } else {
                Style::new().fg(Color::Cyan)
            };
            Line::from(vec![
                Span::styled(format!(" {item} "), style),
                Span::styled(format!(" {help}"), Style::new().fg(Color::DarkGray)),
            ])
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines), area);
}

/// The composer's lines wrapped to the width, and where the cursor lands.
fn composer_rows(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    for line in app.composer.lines() {
        rows.extend(wrap_flat(&Line::from(line.clone()), usize::from(width)));
    }
    rows
}

fn draw_composer(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let border = if app.busy { Color::DarkGray } else { Color::Cyan };
    let search_title = app.composer_title();
    let title = if let Some(title) = search_title.as_deref() {
        title
    } else if app.busy {
        " running… Esc interrupts "
    } else {
        " message · Enter sends · Shift/Alt+Enter newline · / commands · @ files "
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(border))
        .title(Span::styled(title, Style::new().fg(Color::DarkGray)));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return; // a terminal too small for the composer
    }
    let width = usize::from(inner.width.max(1));
    // Find the cursor's wrapped row and column.
    let (row, _) = app.composer.cursor();
    let mut cursor_row = 0;
    for line in &app.composer.lines()[..row] {
        cursor_row += wrap_flat(&Line::from(line.clone()), width).len();
    }
    let x = app.composer.cursor_x();
    cursor_row += x / width;
    let cursor_col = x % width;
    let rows = composer_rows(app, inner.width.max(1));
    let height = usize::from(inner.height);
    let top = (cursor_row + 1).saturating_sub(height);
    let visible: Vec<Line<'static>> = rows.into_iter().skip(top).take(height).collect();
    if app.composer.is_empty() && !app.busy {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "Ask brute to do something…",
                Style::new().fg(Color::DarkGray),
            )),
            inner,
        );
    } else {
        frame.render_widget(Paragraph::new(visible), inner);
    }
    if app.modals.is_empty() {
        frame.set_cursor_position(Position::new(
            inner.x + cursor_col as u16,
            inner.y + (cursor_row - top) as u16,
        ));
    }
}

fn compact(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

/// How long a status line segment stays when the line is too narrow: segments with the
/// highest number go first; the rest keep their places. State, mode, model, context and cost
/// always stay (in that order of importance); the key hint and the path yield first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Keep {
    State,
    Mode,
    Model,
    Context,
    Cost,
    /// Counts of things running beside the turn (background processes).
    Counts,
    Tokens,
    Path,
    Hint,
}

/// One segment of the status line: what it shows, a shorter form for a narrow line, and how
/// long it stays.
pub struct Segment {
    pub keep: Keep,
    pub spans: Vec<Span<'static>>,
    pub short: Option<Vec<Span<'static>>>,
}

impl Segment {
    fn new(keep: Keep, spans: Vec<Span<'static>>) -> Self {
        Self {
            keep,
            spans,
            short: None,
        }
    }

    fn or_short(self, short: Vec<Span<'static>>) -> Self {
        Self {
            short: Some(short),
            ..self
        }
    }

    fn width(&self) -> usize {
        self.spans.iter().map(Span::width).sum()
    }
}

/// The status line's segments in the order they are shown.
fn status_segments(app: &App) -> Vec<Segment> {
    let state = app.state_label();
    let state_style = match state.as_str() {
        "idle" => Style::new().fg(Color::Green),
        _ => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    };
    let hints = if app.busy {
        "Esc interrupt · Ctrl-C quit"
    } else {
        "/help · Ctrl-C quit"
    };
    let mode_style = match app.session.sandbox {
        crate::permission::Mode::FullAccess => Style::new().fg(Color::Red),
        crate::permission::Mode::Plan => Style::new().fg(Color::Magenta),
        _ => Style::new().fg(Color::Cyan),
    };
    let tokens = match app.usage.cache_read_tokens {
        0 => format!(
            "↑{} ↓{}",
            compact(app.usage.input_tokens),
            compact(app.usage.output_tokens)
        ),
        cached => format!(
            "↑{} ({} cached) ↓{}",
            compact(app.usage.input_tokens),
            compact(cached),
            compact(app.usage.output_tokens)
        ),
    };
    let mut segments = vec![
        Segment::new(Keep::State, vec![Span::styled(state, state_style)]),
        Segment::new(
            Keep::Mode,
            vec![Span::styled(app.session.sandbox.as_str().to_owned(), mode_style)],
        ),
        Segment::new(
            Keep::Model,
            vec![Span::raw(format!("{} {}", app.session.provider, app.session.model))],
        )
        .or_short(vec![Span::raw(app.session.model.clone())]),
        Segment::new(Keep::Path, vec![Span::raw(app.session.cwd.clone())]),
        Segment::new(Keep::Tokens, vec![Span::raw(tokens)]),
    ];
    // Shown beside the state (in vector order); whether it stays is its `Keep`'s say.
    if app.background > 0 {
        let count = Span::styled(format!("{} bg", app.background), Style::new().fg(Color::Yellow));
        segments.insert(1, Segment::new(Keep::Counts, vec![count]));
    }
    if let Some(context) = super::app::context_label(app.context) {
        let short = context.split(' ').take(2).collect::<Vec<_>>().join(" ");
        segments.push(Segment::new(Keep::Context, vec![Span::raw(context)]).or_short(vec![Span::raw(short)]));
    }
    if let Some(cost) = app.cost_usd {
        segments.push(Segment::new(Keep::Cost, vec![Span::raw(format!("${cost:.4}"))]));
    }
    segments.push(Segment::new(
        Keep::Hint,
        vec![Span::styled(hints, Style::new().fg(Color::DarkGray))],
    ));
    segments
}

/// Fits the segments to `width` (a space at the start and ` │ ` between segments): from the
/// segment that stays longest to the one that yields first, each is kept if it still fits;
/// those that always stay are kept and shortened instead.
fn fit(segments: Vec<Segment>, width: usize) -> Vec<Segment> {
    let used = |segments: &[Segment]| -> usize {
        1 + segments.iter().map(Segment::width).sum::<usize>() + 3 * segments.len().saturating_sub(1)
    };
    let mut order: Vec<usize> = (0..segments.len()).collect();
    order.sort_by_key(|&i| segments[i].keep);
    let mut kept = vec![false; segments.len()];
    let mut total = 1;
    for i in order {
        let cost = segments[i].width() + if total > 1 { 3 } else { 0 };
        if segments[i].keep <= Keep::Cost || total + cost <= width {
            kept[i] = true;
            total += cost;
        }
    }
    let mut segments: Vec<Segment> = segments
        .into_iter()
        .zip(kept)
        .filter_map(|(segment, kept)| kept.then_some(segment))
        .collect();
    // Still too wide: the model without its provider, the context without its counts.
    for keep in [Keep::Model, Keep::Context] {
        if used(&segments) <= width {
            break;
        }
        if let Some(segment) = segments.iter_mut().find(|s| s.keep == keep)
            && let Some(short) = segment.short.take()
        {
            segment.spans = short;
        }
    }
    // Then the model's name ends in `…`.
    let over = used(&segments).saturating_sub(width);
    if over > 0
        && let Some(segment) = segments.iter_mut().find(|s| s.keep == Keep::Model)
    {
        let name: String = segment.spans.iter().map(|s| s.content.as_ref()).collect();
        let chars = name.chars().count();
        let room = chars.saturating_sub(over + 1).max(4);
        if room < chars {
            let cut: String = name.chars().take(room).collect();
            segment.spans = vec![Span::raw(format!("{cut}…"))];
        }
    }
    segments
}

fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let dim = Style::new().fg(Color::DarkGray);
    let mut line = Line::from(Span::raw(" "));
    for (i, segment) in fit(status_segments(app), usize::from(area.width))
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            line.spans.push(Span::styled(" │ ", dim));
        }
        line.spans.extend(segment.spans);
    }
    frame.render_widget(Paragraph::new(line).style(Style::new().bg(Color::Black)), area);
}
