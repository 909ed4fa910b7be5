//! Wraps styled lines to a width, preferring to break after spaces; wide characters (CJK,
//! emoji) count as two columns and are never split.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of a string in columns.
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Wraps one line into lines of at most `max` columns (at least one line is returned).
pub fn wrap(line: &Line<'_>, max: usize) -> Vec<Line<'static>> {
    let max = max.max(1);
    let style = line.style;
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| span.content.chars().map(move |c| (c, span.style)))
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let w = cells[end].0.width().unwrap_or(0);
            if used + w > max {
                break;
            }
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        if end == start {
            end = start + 1; // a character wider than the line: show it anyway
        } else if end < cells.len()
            && let Some(space) = last_space.filter(|s| *s > start)
        {
            end = space + 1;
        }
        out.push(to_line(&cells[start..end], style));
        start = end;
    }
    if out.is_empty() {
        out.push(Line::default().style(style));
    }
    out
}

fn to_line(cells: &[(char, Style)], style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for (c, s) in cells {
        if current != Some(*s) {
            if let Some(prev) = current {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            current = Some(*s);
        }
        text.push(*c);
    }
    if let Some(prev) = current {
        spans.push(Span::styled(text, prev));
    }
    Line::from(spans).style(style)
}

/// Wraps many lines.
pub fn wrap_all(lines: &[Line<'_>], max: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_counts_wide_chars() {
        assert_eq!(text(&wrap(&Line::from("hello big world"), 9)), ["hello ", "big world"]);
        assert_eq!(text(&wrap(&Line::from("abcdefghij"), 4)), ["abcd", "efgh", "ij"]);
        assert_eq!(
            text(&wrap(&Line::from("日本語テキスト"), 5)),
            ["日本", "語テ", "キス", "ト"]
        );
        assert_eq!(text(&wrap(&Line::from(""), 5)), [""]);
        assert_eq!(width("🎉a"), 3);
    }
}
