//! Draws the dialogs (questions and confirmations) so they stay usable at any size: the
//! choices scroll to keep the highlighted one in view (with "↑ n more" / "↓ n more"
//! markers), the free-text row and the key hints are always shown, hints and the title
//! shorten to the width instead of being cut, and a long question or body gives way first.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::confirm::{Confirm, Payload};
use super::dialog::Dialog;
use super::wrap::{width as text_width, wrap, wrap_flat};

const DIM: Style = Style::new().fg(Color::DarkGray);
/// The bar before each row of an approval's payload.
const GUTTER: &str = "▏ ";
const SELECTED: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);

/// A dialog's content before it is fitted to a height.
struct Parts {
    /// The question or what will happen; cut first when space is short.
    head: Vec<Line<'static>>,
    /// The choices, each already wrapped.
    items: Vec<Vec<Line<'static>>>,
    /// The item kept in view.
    selected: usize,
    /// Rows always shown under the choices (the free-text row, a denial's reason).
    foot: Vec<Line<'static>>,
    /// The key hints, longest first; the first that fits the width is shown.
    hints: &'static [&'static str],
}

/// The box's width for an area: room to breathe, at most 80 columns.
fn box_width(area: Rect) -> u16 {
    area.width.saturating_sub(4).clamp(20, 80).min(area.width)
}

/// Joins title parts, leaving out (from the end) those that do not fit `width`.
fn fit_title(parts: &[String], width: usize) -> String {
    let mut title = String::new();
    for (i, part) in parts.iter().enumerate() {
        let piece = if i == 0 {
            format!(" {part} ")
        } else {
            format!("· {part} ")
        };
        if text_width(&title) + text_width(&piece) > width {
            break;
        }
        title.push_str(&piece);
    }
    title
}

/// The hint variant that fits `width` (the shortest, wrapped, when none does).
fn hint_lines(hints: &[&str], width: usize) -> Vec<Line<'static>> {
    let chosen = hints
        .iter()
        .find(|h| text_width(h) <= width)
        .or(hints.last())
        .copied()
        .unwrap_or("");
    wrap(&Line::styled(chosen.to_owned(), DIM), width)
}

/// Fits the parts into `height` rows of `width` columns.
fn layout(parts: Parts, width: usize, height: usize) -> Vec<Line<'static>> {
    let hints = hint_lines(parts.hints, width);
    let fixed = parts.foot.len() + hints.len();
    let item_total: usize = parts.items.iter().map(Vec::len).sum();
    let avail = height.saturating_sub(fixed);
    // Spacers (a blank line after the head and before the hints) only when everything fits.
    let spacious = parts.head.len() + item_total + 2 <= avail;
    let spacers = if spacious { 2 } else { 0 };
    let avail = avail - spacers;
    // The head gives way to at least three rows of choices (or all of them, if fewer).
    let item_min = item_total.min(3);
    let head_rows = parts.head.len().min(avail.saturating_sub(item_min).max(1.min(avail)));
    let mut out: Vec<Line<'static>> = parts.head[..head_rows].to_vec();
    if head_rows < parts.head.len()
        && let Some(last) = out.last_mut()
    {
        *last = Line::styled("…", DIM);
    }
    if spacious {
        out.push(Line::default());
    }
    out.extend(window(&parts.items, parts.selected, avail - head_rows));
    out.extend(parts.foot);
    if spacious {
        out.push(Line::default());
    }
    out.extend(hints);
    out
}

/// The items that fit `rows`, scrolled so `selected` shows, with markers for hidden ones.
fn window(items: &[Vec<Line<'static>>], selected: usize, rows: usize) -> Vec<Line<'static>> {
    let total: usize = items.iter().map(Vec::len).sum();
    if total <= rows {
        return items.iter().flatten().cloned().collect();
    }
    if rows == 0 || items.is_empty() {
        return Vec::new();
    }
    let selected = selected.min(items.len() - 1);
    let marker = |arrow: &str, n: usize| Line::styled(format!("  {arrow} {n} more"), DIM);
    // The first item shown: the smallest that keeps `selected` in view.
    for first in 0..=selected {
        let up = usize::from(first > 0);
        let budget = rows.saturating_sub(up);
        let mut used = 0;
        let mut last = first;
        for (end, item) in items.iter().enumerate().skip(first) {
            let more_after = usize::from(end + 1 < items.len());
            if used + item.len() + more_after > budget && end > first {
                break;
            }
            used += item.len();
            last = end;
        }
        if last >= selected || first == selected {
            let mut out = Vec::new();
            if up == 1 {
                out.push(marker("↑", first));
            }
            for item in &items[first..=last] {
                out.extend(item.iter().cloned());
            }
            let below = items.len() - last - 1;
            if below > 0 {
                out.push(marker("↓", below));
            }
            out.truncate(rows);
            return out;
        }
    }
    Vec::new()
}

/// The question dialog.
pub fn draw_dialog(frame: &mut Frame<'_>, dialog: &Dialog, open: usize, area: Rect) -> Rect {
    let q = dialog.question();
    let width = box_width(area);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let head = wrap(
        &Line::styled(q.question.clone(), Style::new().add_modifier(Modifier::BOLD)),
        inner,
    );
    let items = q
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            let selected = i == dialog.selected;
            let check = match (q.multiple, dialog.checked.get(i)) {
                (true, Some(true)) => "[x] ",
                (true, _) => "[ ] ",
                (false, _) => "",
            };
            let mut spans = vec![Span::styled(
                format!(
                    "{} {}. {check}{}",
                    if selected { "›" } else { " " },
                    i + 1,
                    option.label
                ),
                if selected { SELECTED } else { Style::new() },
            )];
            if let Some(description) = &option.description {
                spans.push(Span::styled(format!(" — {description}"), DIM));
            }
            if q.default.as_deref() == Some(option.label.as_str()) {
                spans.push(Span::styled(" (default)", DIM));
            }
            wrap(&Line::from(spans), inner)
        })
        .collect();
    let on_other = dialog.selected == dialog.other_row();
    let other_label = if q.options.is_empty() { "Answer" } else { "Other" };
    let typed = if dialog.other.is_empty() && on_other {
        q.default.as_ref().map_or_else(
            || "type your answer".to_owned(),
            |d| format!("Enter takes the default: {d}"),
        )
    } else {
        dialog.other.clone()
    };
    let foot = wrap(
        &Line::from(vec![
            Span::styled(
                format!("{} {other_label}: ", if on_other { "›" } else { " " }),
                if on_other {
                    SELECTED
                } else {
                    Style::new().fg(Color::Gray)
                },
            ),
            Span::raw(typed),
        ]),
        inner,
    );
    let hints: &[&str] = if q.multiple {
        &[
            "↑↓ move · Space toggle · Enter confirm · Esc cancel",
            "↑↓ · Space toggle · Enter · Esc",
            "↑↓ Space Enter Esc",
        ]
    } else {
        &[
            "↑↓ or number · type for your own answer · Enter confirm · Esc cancel",
            "↑↓/number · type to answer · Enter · Esc",
            "↑↓ Enter Esc",
        ]
    };
    let height = usize::from(area.height.saturating_sub(2));
    let lines = layout(
        Parts {
            head,
            items,
            selected: dialog.selected,
            foot,
            hints,
        },
        inner,
        height,
    );
    let mut title = vec![format!("Question {}/{}", dialog.index + 1, dialog.questions.len())];
    if open > 1 {
        title.push(format!("{} more waiting", open - 1));
    }
    if let Some(header) = &q.header {
        title.insert(1, header.clone());
    }
    draw_box(frame, area, width, lines, fit_title(&title, inner))
}

/// A confirmation: what will happen, then the choices with their keys. An approval's payload
/// is shown whole when it fits, else in a scrolled view (see [`approval_layout`]).
pub fn draw_confirm(frame: &mut Frame<'_>, confirm: &mut Confirm, open: usize, area: Rect) -> Rect {
    let width = box_width(area);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let head: Vec<Line<'static>> = confirm
        .body
        .lines()
        .flat_map(|line| wrap(&Line::raw(line.to_owned()), inner))
        .collect();
    let items = confirm
        .choices
        .iter()
        .enumerate()
        .map(|(i, choice)| {
            let selected = i == confirm.selected;
            wrap(
                &Line::styled(
                    format!(
                        "{} {} ({}) {}",
                        if selected { "›" } else { " " },
                        i + 1,
                        choice.key,
                        choice.label
                    ),
                    if selected { SELECTED } else { Style::new() },
                ),
                inner,
            )
        })
        .collect();
    let ask = if confirm.plan {
        "› what should change? "
    } else {
        "› why not? "
    };
    let foot = match &confirm.reason {
        Some(reason) => wrap(
            &Line::from(vec![Span::styled(ask, SELECTED), Span::raw(reason.clone())]),
            inner,
        ),
        None => Vec::new(),
    };
    // A plan offers "with edits auto-approved" only when it is not what running it means.
    let plan_accepts = confirm.plan && confirm.choices.iter().any(|c| c.key == 'a');
    let hints: &[&str] = match (&confirm.reason, confirm.approval) {
        (Some(_), _) if confirm.plan => &[
            "type what should change (optional) · Enter sends it, planning goes on · Esc without a note",
            "type a note · Enter sends · Esc skips",
            "Enter send · Esc",
        ],
        (None, _) if plan_accepts => &[
            "Enter or y runs it · a with edits auto-approved · n keep planning · Esc stops",
            "y run · a edits auto-approved · n keep planning",
            "y/a run · n plan on",
        ],
        (None, _) if confirm.plan => &[
            "Enter or y runs it · n keep planning (with a note) · Esc stops",
            "y run · n keep planning",
            "y run · n plan on",
        ],
        (Some(_), _) => &[
            "type why (optional) · Enter denies with it · Esc denies without",
            "type why · Enter denies · Esc skips",
            "Enter deny · Esc",
        ],
        (None, true) => &[
            "Enter or y allows once · a session · p project · n or Esc denies",
            "y once · a session · p project · n deny",
            "y/a/p allow · n deny",
        ],
        (None, false) => &[
            "Enter takes the highlighted choice · a letter picks one · n or Esc cancels",
            "Enter picks · a letter picks · Esc cancels",
            "Enter · letter · Esc",
        ],
    };
    let height = usize::from(area.height.saturating_sub(2));
    let parts = Parts {
        head,
        items,
        selected: confirm.selected,
        foot,
        hints,
    };
    let lines = match &mut confirm.payload {
        Some(payload) => {
            let scroll_hints: &[&str] = if confirm.reason.is_some() {
                hints
            } else if plan_accepts {
                &[
                    "↑↓ PgUp PgDn scroll · Tab choice · y run · a edits auto-approved · n keep planning",
                    "↑↓ PgDn scroll · Tab · y/a run · n plan on",
                    "↑↓ scroll · y/a · n",
                ]
            } else if confirm.plan {
                &[
                    "↑↓ PgUp PgDn scroll · Tab choice · y run · n keep planning",
                    "↑↓ PgDn scroll · Tab · y run · n plan on",
                    "↑↓ scroll · y · n",
                ]
            } else {
                &[
                    "↑↓ PgUp PgDn scroll · Tab choice · y once · a session · p project · n deny",
                    "↑↓ PgDn scroll · Tab · y/a/p allow · n deny",
                    "↑↓ scroll · y/a/p · n deny",
                ]
            };
            approval_layout(parts, payload, scroll_hints, inner, height)
        }
        None => layout(parts, inner, height),
    };
    let mut title = vec![confirm.title.trim().to_owned()];
    if open > 1 {
        title.push(format!("{} more waiting", open - 1));
    }
    draw_box(frame, area, width, lines, fit_title(&title, inner))
}

/// `n more lines`.
fn lines_count(n: usize) -> String {
    if n == 1 {
        "1 more line".to_owned()
    } else {
        format!("{n} more lines")
    }
}

/// The line under a scrolled payload: how much is below (or above), the keys, and, when an
/// allow key came too early (`nudge`), why nothing happened. The longest form that fits
/// `width` (the shortest, wrapped, when none does).
fn more_line(nudge: bool, below: usize, above: usize, width: usize) -> (String, Style) {
    let (forms, style) = if below == 0 {
        let above = if above == 1 {
            "1 line above".to_owned()
        } else {
            format!("{above} lines above")
        };
        (
            vec![
                format!("end · {above} — ↑/PgUp to scroll back"),
                format!("end · {above} — ↑ PgUp"),
            ],
            DIM,
        )
    } else if nudge {
        let below = lines_count(below);
        (
            vec![
                format!("see all of it before allowing: {below} — ↓/PgDn or Enter to read on"),
                format!("see all first: {below} — ↓ PgDn Enter"),
                format!("see all first: {below}"),
            ],
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )
    } else {
        let below = lines_count(below);
        (
            vec![
                format!("{below} — ↑/↓ (or PgUp/PgDn) to scroll"),
                format!("{below} — ↑↓ PgUp PgDn"),
                below,
            ],
            DIM,
        )
    };
    let chosen = forms
        .iter()
        .find(|form| text_width(form) <= width)
        .or(forms.last())
        .cloned()
        .unwrap_or_default();
    (chosen, style)
}

/// Fits an approval into `height` rows: the head (tool, why), the payload, the choices, the
/// foot and the hints. The payload is never cut: it is shown whole when it fits beside the
/// head and three rows of choices, else in a view with a line saying how much more there is
/// (and `scroll_hints` for the keys); the head gives way to the view first, and the choices
/// beyond three when the view would be small. Each call
/// reports what it shows to `payload` ([`Payload::fit`]), which counts it as seen.
fn approval_layout(
    parts: Parts,
    payload: &mut Payload,
    scroll_hints: &[&str],
    width: usize,
    height: usize,
) -> Vec<Line<'static>> {
    let rows = payload_rows(payload, width);
    let total = rows.len();
    let item_total: usize = parts.items.iter().map(Vec::len).sum();
    let item_min = item_total.min(3);
    let head_len = parts.head.len();
    let hints = hint_lines(parts.hints, width);
    let avail = height.saturating_sub(parts.foot.len() + hints.len());
    let (head_rows, view, more_rows, spacious, hints) = if head_len + total + item_total + 2 <= avail {
        (head_len, total, 0, true, hints)
    } else if total + item_min + head_len.min(1) <= avail {
        (head_len.min(avail - total - item_min), total, 0, false, hints)
    } else {
        let hints = hint_lines(scroll_hints, width);
        let avail = height.saturating_sub(parts.foot.len() + hints.len());
        // Room for the longest the line under the view can be (the most digits).
        let nudge = payload.nudged && !payload.seen;
        let more_rows = [(total, 0), (0, total)]
            .iter()
            .map(|&(below, above)| wrap(&Line::raw(more_line(nudge, below, above, width).0), width).len())
            .max()
            .unwrap_or(1);
        // Every choice shows when the view keeps a few rows more than the head beside it.
        let items = if avail >= item_total + more_rows + head_len.min(2) + 6 {
            item_total
        } else {
            item_min
        };
        let budget = avail.saturating_sub(items + more_rows);
        let mut head_rows = head_len.min(budget.saturating_sub(3).max(1)).min(budget);
        let mut view = budget - head_rows;
        if view == 0 && head_rows > 0 {
            head_rows -= 1;
            view = 1;
        }
        (head_rows, view, more_rows, false, hints)
    };
    let start = payload.fit(width, total, view);
    let mut out: Vec<Line<'static>> = parts.head[..head_rows].to_vec();
    if head_rows > 1
        && head_rows < head_len
        && let Some(last) = out.last_mut()
    {
        *last = Line::styled("…", DIM);
    }
    if spacious {
        out.push(Line::default());
    }
    let end = (start + view).min(total);
    out.extend(rows[start.min(end)..end].iter().cloned());
    if more_rows > 0 {
        let (text, style) = more_line(payload.nudged && !payload.seen, total - end, start, width);
        let mut more = wrap(&Line::styled(text, style), width);
        more.truncate(more_rows);
        out.extend(more);
    }
    let item_rows = avail_rows(height, &parts.foot, &hints).saturating_sub(out.len());
    out.extend(window(&parts.items, parts.selected, item_rows));
    out.extend(parts.foot);
    if spacious {
        out.push(Line::default());
    }
    out.extend(hints);
    payload.rows = Some((width, rows));
    out
}

/// The payload wrapped to `width`, each row behind a bar so it reads as one block apart from
/// brute's words: taken from the last draw's when the width is the same (put back by the
/// caller).
fn payload_rows(payload: &mut Payload, width: usize) -> Vec<Line<'static>> {
    if let Some((at, rows)) = payload.rows.take()
        && at == width
    {
        return rows;
    }
    let room = width.saturating_sub(text_width(GUTTER)).max(1);
    payload
        .text
        .lines()
        .flat_map(|line| wrap_flat(&Line::raw(line.to_owned()), room))
        .map(|row| {
            let mut spans = vec![Span::styled(GUTTER, DIM)];
            spans.extend(row.spans);
            Line::from(spans)
        })
        .collect()
}

/// The rows above the foot and the hints.
fn avail_rows(height: usize, foot: &[Line<'_>], hints: &[Line<'_>]) -> usize {
    height.saturating_sub(foot.len() + hints.len())
}

/// A dialog box of `width`, centred in `area`, tall enough for `lines` (cut to the area);
/// returns where it was drawn.
fn draw_box(frame: &mut Frame<'_>, area: Rect, width: u16, lines: Vec<Line<'static>>, title: String) -> Rect {
    let height = (lines.len() as u16 + 2).min(area.height);
    let rect = Rect::new(
        area.x + (area.width.saturating_sub(width)) / 2,
        area.y + area.height.saturating_sub(height) / 2,
        width.min(area.width),
        height,
    );
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(Color::Yellow))
        .title(title);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
    rect
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Vec<Line<'static>>> {
        (0..n).map(|i| vec![Line::raw(format!("option {i}"))]).collect()
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn the_window_follows_the_selection() {
        assert_eq!(text(&window(&items(3), 0, 5)).len(), 3);
        assert_eq!(
            text(&window(&items(60), 0, 4)),
            ["option 0", "option 1", "option 2", "  ↓ 57 more"]
        );
        assert_eq!(
            text(&window(&items(60), 30, 4)),
            ["  ↑ 29 more", "option 29", "option 30", "  ↓ 29 more"]
        );
        assert_eq!(
            text(&window(&items(60), 59, 4)),
            ["  ↑ 57 more", "option 57", "option 58", "option 59"]
        );
        assert_eq!(
            text(&window(&items(60), 99, 4)).last().map(String::as_str),
            Some("option 59")
        );
        assert!(window(&items(60), 5, 0).is_empty());
    }

    #[test]
    fn titles_and_hints_shorten_to_the_width() {
        let parts = [
            "Question 1/3".to_owned(),
            "Setup".to_owned(),
            "2 more waiting".to_owned(),
        ];
        assert_eq!(fit_title(&parts, 80), " Question 1/3 · Setup · 2 more waiting ");
        assert_eq!(fit_title(&parts, 24), " Question 1/3 · Setup ");
        let hints = ["a long hint text", "short", "s"];
        assert_eq!(text(&hint_lines(&hints, 40)), ["a long hint text"]);
        assert_eq!(text(&hint_lines(&hints, 6)), ["short"]);
    }

    /// At every size an approval's rows fit the height with the hints last, and a payload
    /// that does not fit is shown in a view with the line saying how much more there is.
    #[test]
    fn approvals_fit_every_size_and_say_what_is_hidden() {
        let kind = crate::protocol::RequestKind::Approval {
            tool: "shell".into(),
            summary: "echo status".into(),
            detail: format!("echo status{}touch OUTSIDE", "\n".repeat(60)),
            reason: "it asks to run without the sandbox: needs the network".into(),
            call_id: String::new(),
            input: serde_json::Value::Null,
        };
        for width in [20, 34, 50, 78] {
            for height in 6..40 {
                let Some(mut confirm) = Confirm::for_request("a", &kind) else {
                    panic!("no dialog")
                };
                let head = vec![Line::raw(confirm.body.clone())];
                let items = (0..4).map(|i| vec![Line::raw(format!("choice {i}"))]).collect();
                let parts = Parts {
                    head,
                    items,
                    selected: 0,
                    foot: Vec::new(),
                    hints: &["hints"],
                };
                let Some(payload) = confirm.payload.as_mut() else {
                    panic!("no payload")
                };
                let lines = text(&approval_layout(parts, payload, &["scroll hints"], width, height));
                assert!(lines.len() <= height, "{width}x{height}: {lines:?}");
                assert_eq!(
                    lines.last().map(String::as_str),
                    Some("scroll hints"),
                    "{width}x{height}"
                );
                assert!(
                    lines.iter().any(|l| l.contains("more line")),
                    "{width}x{height}: {lines:?}"
                );
                assert!(
                    lines.iter().any(|l| l.contains("› ") || l.contains("choice 0")),
                    "{lines:?}"
                );
                assert!(!payload.seen, "{width}x{height}");
            }
        }
    }
}
