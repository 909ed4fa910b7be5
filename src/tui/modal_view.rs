//! Draws the dialogs (questions and confirmations) so they stay usable at any size: the
//! choices scroll to keep the highlighted one in view (with "↑ n more" / "↓ n more"
//! markers), the free-text row and the key hints are always shown, hints and the title
//! shorten to the width instead of being cut, and a long question or body gives way first.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::confirm::Confirm;
use super::dialog::Dialog;
use super::wrap::{width as text_width, wrap};

const DIM: Style = Style::new().fg(Color::DarkGray);
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

/// A confirmation: what will happen, then the choices with their keys.
pub fn draw_confirm(frame: &mut Frame<'_>, confirm: &Confirm, open: usize, area: Rect) -> Rect {
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
    let foot = match &confirm.reason {
        Some(reason) => wrap(
            &Line::from(vec![Span::styled("› why not? ", SELECTED), Span::raw(reason.clone())]),
            inner,
        ),
        None => Vec::new(),
    };
    let hints: &[&str] = match (&confirm.reason, confirm.approval) {
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
    let lines = layout(
        Parts {
            head,
            items,
            selected: confirm.selected,
            foot,
            hints,
        },
        inner,
        height,
    );
    let mut title = vec![confirm.title.trim().to_owned()];
    if open > 1 {
        title.push(format!("{} more waiting", open - 1));
    }
    draw_box(frame, area, width, lines, fit_title(&title, inner))
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
}
