//! Wraps styled lines to a width: breaks after spaces (a word longer than the line is split),
//! keeps grapheme clusters whole (an emoji with modifiers, a letter with combining marks),
//! counts wide characters (CJK, emoji) as two columns, expands tabs to tab stops, and gives
//! continuation lines a hanging indent so list items, quotes, tool panes and numbered `read`
//! output stay in their columns.
//!
//! Own code rather than `textwrap`: the lines are ratatui spans with styles, and the indent
//! repeats box bars (`│`) with their colour, which textwrap's string API does not model.
//! The grapheme and width tables come from `unicode-segmentation` and `unicode-width`, which
//! ratatui already builds.

use std::ops::Range;
use std::sync::Arc;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns between tab stops (tabs are expanded from the start of the drawn line).
pub const TAB_WIDTH: usize = 4;

/// Display width of a string in columns.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// One grapheme cluster of a line: where its text sits in [`Cells::text`], its width and the
/// span (style) it came from.
#[derive(Clone, Copy)]
struct Cell {
    start: usize,
    end: usize,
    width: usize,
    style: usize,
    /// Produced by expanding a tab.
    tab: bool,
}

struct Cells {
    text: String,
    cells: Vec<Cell>,
    styles: Vec<Style>,
}

impl Cells {
    fn of(line: &Line<'_>) -> Self {
        let mut out = Cells {
            text: String::new(),
            cells: Vec::new(),
            styles: Vec::with_capacity(line.spans.len()),
        };
        let mut column = 0;
        for span in &line.spans {
            let style = out.styles.len();
            out.styles.push(span.style);
            for g in span.content.graphemes(true) {
                if g == "\t" {
                    let pad = TAB_WIDTH - column % TAB_WIDTH;
                    for _ in 0..pad {
                        out.push(" ", 1, style, true);
                    }
                    column += pad;
                    continue;
                }
                let w = width(g);
                out.push(g, w, style, false);
                column += w;
            }
        }
        out
    }

    fn push(&mut self, g: &str, width: usize, style: usize, tab: bool) {
        let start = self.text.len();
        self.text.push_str(g);
        self.cells.push(Cell {
            start,
            end: self.text.len(),
            width,
            style,
            tab,
        });
    }

    fn str(&self, i: usize) -> &str {
        let c = self.cells[i];
        &self.text[c.start..c.end]
    }

    fn is(&self, i: usize, s: &str) -> bool {
        i < self.cells.len() && self.str(i) == s
    }

    /// How many leading cells form the line's prefix: indentation, quote and pane bars, list
    /// markers (`•`, `-`, `1.`), the prompt mark and a `read` line number before its tab.
    /// Continuation lines are indented by the prefix's width.
    fn prefix_len(&self) -> usize {
        let n = self.cells.len();
        let mut i = 0;
        loop {
            let start = i;
            while self.is(i, " ") {
                i += 1;
            }
            if i + 1 < n && self.is(i + 1, " ") && matches!(self.str(i), "│" | "•" | "◦" | "▪" | "-" | "*" | "›" | ">")
            {
                i += 2;
            } else if i < n && self.str(i).bytes().all(|b| b.is_ascii_digit()) {
                let mut j = i;
                while j < n && self.str(j).bytes().all(|b| b.is_ascii_digit()) {
                    j += 1;
                }
                if (self.is(j, ".") || self.is(j, ")")) && self.is(j + 1, " ") {
                    i = j + 2;
                } else if j < n && self.cells[j].tab {
                    i = j;
                    while i < n && self.cells[i].tab {
                        i += 1;
                    }
                } else {
                    return start.max(i);
                }
            }
            if i == start {
                return i;
            }
        }
    }
}

/// Wraps one line into lines of at most `max` columns (at least one line is returned), with
/// a hanging indent under the line's prefix (see the module docs).
pub fn wrap(line: &Line<'_>, max: usize) -> Vec<Line<'static>> {
    wrap_with(line, max, true, &[], &mut Vec::new())
}

/// Wraps one line without a hanging indent (the composer, whose cursor maps columns 1:1).
pub fn wrap_flat(line: &Line<'_>, max: usize) -> Vec<Line<'static>> {
    wrap_with(line, max, false, &[], &mut Vec::new())
}

/// A link placed in wrapped lines: its row among them, its columns and its address (a link
/// broken over two rows is two of these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub row: usize,
    pub start: usize,
    pub end: usize,
    pub url: Arc<str>,
}

fn place(placed: &mut Vec<Placed>, row: usize, start: usize, width: usize, url: &Arc<str>) {
    if width == 0 {
        return;
    }
    match placed.last_mut() {
        Some(last) if last.row == row && last.end == start && last.url == *url => last.end += width,
        _ => placed.push(Placed {
            row,
            start,
            end: start + width,
            url: url.clone(),
        }),
    }
}

/// [`wrap_all`] for lines with links (spans of a line, see [`super::markdown::Link`]):
/// the wrapped lines and where each link landed in them.
pub fn wrap_all_linked(
    lines: &[Line<'_>],
    max: usize,
    links: &[super::markdown::Link],
) -> (Vec<Line<'static>>, Vec<Placed>) {
    let mut out = Vec::with_capacity(lines.len());
    let mut placed = Vec::new();
    let mut here: Vec<(Range<usize>, Arc<str>)> = Vec::new();
    // By line, so each line finds its links without a pass over all of them (an answer
    // streamed with thousands of links would otherwise cost lines × links per frame).
    let mut sorted: Vec<&super::markdown::Link> = links.iter().collect();
    sorted.sort_by_key(|l| l.line);
    let mut next = 0;
    for (i, line) in lines.iter().enumerate() {
        here.clear();
        while next < sorted.len() && sorted[next].line < i {
            next += 1;
        }
        while next < sorted.len() && sorted[next].line == i {
            here.push((sorted[next].spans.clone(), sorted[next].url.clone()));
            next += 1;
        }
        if here.is_empty() {
            out.extend(wrap(line, max));
            continue;
        }
        let first_row = out.len();
        let mut mine = Vec::new();
        out.extend(wrap_with(line, max, true, &here, &mut mine));
        placed.extend(mine.into_iter().map(|p| Placed {
            row: p.row + first_row,
            ..p
        }));
    }
    (out, placed)
}

/// Wraps `line`; the columns of the spans `links` name are added to `placed` (rows counted
/// from this line's first).
fn wrap_with(
    line: &Line<'_>,
    max: usize,
    hanging: bool,
    links: &[(Range<usize>, Arc<str>)],
    placed: &mut Vec<Placed>,
) -> Vec<Line<'static>> {
    let max = max.max(1);
    let link_of = |span: usize| {
        links
            .iter()
            .find(|(spans, _)| spans.contains(&span))
            .map(|(_, url)| url)
    };
    // Fast path: most lines fit and hold no tab.
    if line.spans.iter().all(|s| !s.content.contains('\t')) && line.width() <= max {
        if !links.is_empty() {
            let mut column = 0;
            for (i, span) in line.spans.iter().enumerate() {
                let w = width(&span.content);
                if let Some(url) = link_of(i) {
                    place(placed, 0, column, w, url);
                }
                column += w;
            }
        }
        return vec![owned(line)];
    }
    let cells = Cells::of(line);
    let all = &cells.cells;
    // The continuation indent: bars keep their look, everything else becomes blanks. An
    // indent taking more than half the line is dropped so text keeps room.
    let mut indent: Vec<Cell> = Vec::new();
    if hanging {
        let prefix = cells.prefix_len();
        let indent_width: usize = all[..prefix].iter().map(|c| c.width).sum();
        if indent_width * 2 <= max {
            indent = all[..prefix].to_vec();
        }
    }
    let indent_width: usize = indent.iter().map(|c| c.width).sum();
    let mut out = Vec::new();
    let mut start = 0;
    let mut first = true;
    while start < all.len() {
        let room = if first { max } else { max - indent_width };
        if !first {
            while start < all.len() && cells.str(start) == " " {
                start += 1;
            }
            if start == all.len() {
                break;
            }
        }
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < all.len() {
            let w = all[end].width;
            if used + w > room {
                break;
            }
            if cells.str(end) == " " && !all[end].tab {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        if end == start {
            end = start + 1; // a character wider than the line: show it anyway
        } else if end < all.len() && cells.str(end) == " " {
            // The word fits exactly: break at the space after it.
        } else if end < all.len()
            && let Some(space) = last_space.filter(|s| *s > start)
        {
            end = space + 1;
        }
        let mut spans = Vec::new();
        if !links.is_empty() {
            let mut column = if first { 0 } else { indent_width };
            for c in &all[start..end] {
                if let Some(url) = link_of(c.style) {
                    place(placed, out.len(), column, c.width, url);
                }
                column += c.width;
            }
        }
        if !first {
            for c in &indent {
                let text = &cells.text[c.start..c.end];
                if text == "│" {
                    spans.push(Span::styled("│", cells.styles[c.style]));
                } else {
                    spans.push(Span::raw(" ".repeat(c.width)));
                }
            }
        }
        push_cells(&mut spans, &cells, &all[start..end]);
        out.push(Line::from(merge(spans)).style(line.style));
        start = end;
        first = false;
    }
    if out.is_empty() {
        out.push(Line::default().style(line.style));
    }
    out
}

fn owned(line: &Line<'_>) -> Line<'static> {
    Line::from(
        line.spans
            .iter()
            .map(|s| Span::styled(s.content.to_string(), s.style))
            .collect::<Vec<_>>(),
    )
    .style(line.style)
}

fn push_cells(spans: &mut Vec<Span<'static>>, cells: &Cells, run: &[Cell]) {
    let mut text = String::new();
    let mut current: Option<usize> = None;
    for c in run {
        if current != Some(c.style) {
            if let Some(prev) = current {
                spans.push(Span::styled(std::mem::take(&mut text), cells.styles[prev]));
            }
            current = Some(c.style);
        }
        text.push_str(&cells.text[c.start..c.end]);
    }
    if let Some(prev) = current {
        spans.push(Span::styled(text, cells.styles[prev]));
    }
}

/// Joins neighbouring spans of the same style (the indent blanks into one).
fn merge(spans: Vec<Span<'static>>) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::with_capacity(spans.len());
    for span in spans {
        match out.last_mut() {
            Some(last) if last.style == span.style => last.content.to_mut().push_str(&span.content),
            _ => out.push(span),
        }
    }
    out
}

/// Wraps many lines.
pub fn wrap_all(lines: &[Line<'_>], max: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_counts_wide_chars() {
        assert_eq!(text(&wrap(&Line::from("hello big world"), 9)), ["hello big", "world"]);
        assert_eq!(text(&wrap(&Line::from("abcdefghij"), 4)), ["abcd", "efgh", "ij"]);
        assert_eq!(
            text(&wrap(&Line::from("日本語テキスト"), 5)),
            ["日本", "語テ", "キス", "ト"]
        );
        assert_eq!(text(&wrap(&Line::from(""), 5)), [""]);
        assert_eq!(width("🎉a"), 3);
    }

    #[test]
    fn graphemes_stay_whole() {
        // A family emoji (ZWJ sequence) and an e with a combining accent are one cell each.
        let family = "👨‍👩‍👧";
        let lines = text(&wrap(&Line::from(format!("ab{family}cde\u{301}f")), 3));
        assert!(lines.iter().any(|l| l.contains(family)), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("e\u{301}")), "{lines:?}");
    }

    #[test]
    fn tabs_expand_to_stops_and_numbered_lines_keep_their_columns() {
        let lines = [
            Line::from("1\tfn main() {"),
            Line::from("10\t    x"),
            Line::from("100\t}"),
        ];
        assert_eq!(text(&wrap_all(&lines, 40)), ["1   fn main() {", "10      x", "100 }"]);
        // A wrapped numbered line continues under its text, not under the number.
        let long = Line::from(vec![
            Span::styled("  │ ", Style::new().fg(Color::DarkGray)),
            Span::raw("12\tlet value = compute(alpha, beta, gamma);"),
        ]);
        let wrapped = wrap(&long, 30);
        assert_eq!(
            text(&wrapped),
            [
                "  │ 12  let value = ",
                "  │     compute(alpha, beta, ",
                "  │     gamma);"
            ]
        );
        assert_eq!(wrapped[1].spans[0].content, "  ");
        assert_eq!(
            wrapped[1].spans[1].style.fg,
            Some(Color::DarkGray),
            "the bar keeps its colour"
        );
    }

    #[test]
    fn links_follow_their_spans_into_wrapped_rows_and_columns() {
        let url: Arc<str> = Arc::from("https://x.example");
        let link = |line, spans| super::super::markdown::Link {
            line,
            spans,
            url: url.clone(),
        };
        let placed = |row, start, end| Placed {
            row,
            start,
            end,
            url: url.clone(),
        };
        let line = Line::from(vec![
            Span::raw("  • see "),
            Span::raw("日本 docs"),
            Span::raw(" (x) end"),
        ]);
        // Fits: the columns of spans 1 and 2 (wide characters count two).
        let (lines, at) = wrap_all_linked(std::slice::from_ref(&line), 40, &[link(0, 1..3)]);
        assert_eq!(text(&lines), ["  • see 日本 docs (x) end"]);
        assert_eq!(at, [placed(0, 8, 25)]);
        // Wrapped under the hanging indent: a piece per row, after the indent.
        let lines_in = [Line::from("first"), line];
        let (lines, at) = wrap_all_linked(&lines_in, 14, &[link(1, 1..3)]);
        assert_eq!(text(&lines), ["first", "  • see 日本 ", "    docs (x) ", "    end"]);
        assert_eq!(at, [placed(1, 8, 13), placed(2, 4, 13), placed(3, 4, 7)]);
    }

    #[test]
    fn list_items_and_quotes_get_hanging_indents() {
        assert_eq!(
            text(&wrap(&Line::from("  • a list item that wraps"), 14)),
            ["  • a list ", "    item that ", "    wraps"]
        );
        assert_eq!(
            text(&wrap(&Line::from("12. numbered item text"), 12)),
            ["12. numbered", "    item ", "    text"]
        );
        assert_eq!(
            text(&wrap(&Line::from("│ quoted words here"), 10)),
            ["│ quoted ", "│ words ", "│ here"]
        );
        // A prefix wider than half the line is not repeated.
        assert_eq!(text(&wrap(&Line::from("      • abc def"), 8)), ["      • ", "abc def"]);
        assert_eq!(text(&wrap_flat(&Line::from("- abc def"), 6)), ["- abc ", "def"]);
    }
}
