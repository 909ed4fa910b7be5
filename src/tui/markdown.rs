//! Markdown to styled lines: headings, nested lists, emphasis, inline code, links, block
//! quotes, aligned tables and fenced code blocks with syntax highlighting (syntect, pure-Rust
//! regex). The result is unwrapped; the transcript wraps it to the width (with hanging
//! indents, see `wrap.rs`).
//!
//! Links show their text followed by the address in dim parentheses (once, when the text is
//! not the address itself). [`render_linked`] also says which spans of which lines belong to
//! a link, with its address made safe ([`super::hyperlink::clickable`]); the view turns them
//! into OSC 8 hyperlinks where the terminal supports them. The address stays visible even
//! then: the model chooses the text, and the printed address is what a person checks before
//! clicking (and what a terminal without hover hints, a copy or the scrollback shows).
//!
//! Streaming: [`render_streaming`] renders only complete blocks as Markdown and the tail
//! still being received as plain text, so a half-received table, list or emphasis never
//! toggles between renderings as chunks arrive.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use pulldown_cmark::{Alignment, CodeBlockKind, Event as Md, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

struct Highlighting {
    syntaxes: syntect::parsing::SyntaxSet,
    theme: syntect::highlighting::Theme,
}

fn highlighting() -> &'static Highlighting {
    static SETS: OnceLock<Highlighting> = OnceLock::new();
    SETS.get_or_init(|| {
        let themes = syntect::highlighting::ThemeSet::load_defaults();
        let theme = themes.themes.get("base16-ocean.dark").cloned().unwrap_or_default();
        Highlighting {
            syntaxes: syntect::parsing::SyntaxSet::load_defaults_newlines(),
            theme,
        }
    })
}

/// Highlights `code` in `language` (falls back to plain text for unknown languages).
pub fn highlight(code: &str, language: &str) -> Vec<Line<'static>> {
    let h = highlighting();
    let syntax = h
        .syntaxes
        .find_syntax_by_token(language)
        .unwrap_or_else(|| h.syntaxes.find_syntax_plain_text());
    let mut highlighter = syntect::easy::HighlightLines::new(syntax, &h.theme);
    let mut lines = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let spans = match highlighter.highlight_line(line, &h.syntaxes) {
            Ok(ranges) => ranges
                .into_iter()
                .map(|(style, text)| {
                    let fg = style.foreground;
                    Span::styled(
                        text.trim_end_matches('\n').to_owned(),
                        Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b)),
                    )
                })
                .collect(),
            Err(_) => vec![Span::raw(line.trim_end_matches('\n').to_owned())],
        };
        lines.push(Line::from(spans));
    }
    lines
}

/// A link in rendered lines: the spans of line `line` it covers (its text and the dim
/// address after it) and the address, safe to put in an OSC 8 sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub spans: Range<usize>,
    pub url: Arc<str>,
}

/// Renders Markdown to lines.
pub fn render(text: &str) -> Vec<Line<'static>> {
    render_linked(text).0
}

/// Renders Markdown to lines and the clickable links in them (links whose address is not
/// [`super::hyperlink::clickable`] are left out: they show as text only).
pub fn render_linked(text: &str) -> (Vec<Line<'static>>, Vec<Link>) {
    let mut r = Renderer::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    trim_blank_end(&mut r.lines);
    let count = r.lines.len();
    r.links.retain(|l| l.line < count);
    (r.lines, r.links)
}

fn trim_blank_end(lines: &mut Vec<Line<'static>>) {
    while lines
        .last()
        .is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
    {
        lines.pop();
    }
}

/// Renders a message that is still arriving: the complete blocks as Markdown, then the tail
/// as plain text (an open code fence as a code block: its lines only ever grow). Returns the
/// lines and how many of them belong to the complete blocks; those never change as more
/// text arrives, and they are the first lines of the finished message's rendering.
pub fn render_streaming(text: &str) -> (Vec<Line<'static>>, usize) {
    let (lines, _, stable) = render_streaming_linked(text);
    (lines, stable)
}

/// [`render_streaming`] with the links of the complete blocks (the plain tail has none).
pub fn render_streaming_linked(text: &str) -> (Vec<Line<'static>>, Vec<Link>, usize) {
    let split = stable_len(text);
    let (mut lines, links) = render_linked(&text[..split]);
    let stable = lines.len();
    let tail = &text[split..];
    if tail.trim().is_empty() {
        return (lines, links, stable);
    }
    if stable > 0 {
        lines.push(Line::default());
    }
    if fence_open(tail.lines().next().unwrap_or("")).is_some() {
        lines.extend(render(tail));
    } else {
        lines.extend(tail.lines().map(|l| Line::raw(l.to_owned())));
    }
    (lines, links, stable)
}

/// A fence opening line (up to three spaces, then three or more backticks or tildes): its
/// character and length.
fn fence_open(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = trimmed.chars().take_while(|x| *x == c).count();
    (n >= 3 && !(c == '`' && trimmed[n..].contains('`'))).then_some((c, n))
}

/// The length of the prefix of `text` made of complete blocks: up to the last blank line
/// outside a code fence, the end of a closed fence, the start of an open one, or the end of
/// an ATX heading. Only whole lines count.
pub fn stable_len(text: &str) -> usize {
    let mut boundary = 0;
    let mut pos = 0;
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        let start = pos;
        pos += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if let Some((c, n)) = fence {
            let trimmed = content.trim_start_matches(' ');
            let run = trimmed.chars().take_while(|x| *x == c).count();
            if run >= n && trimmed[run..].trim().is_empty() {
                fence = None;
                boundary = pos;
            }
        } else if let Some(open) = fence_open(content) {
            fence = Some(open);
            boundary = start;
        } else if content.trim().is_empty() || is_atx_heading(content) {
            boundary = pos;
        }
    }
    boundary
}

fn is_atx_heading(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    line.len() - trimmed.len() <= 3
        && (1..=6).contains(&hashes)
        && trimmed[hashes..].chars().next().is_none_or(|c| c == ' ')
}

const DIM: Style = Style::new().fg(Color::DarkGray);

/// A table being collected: column alignments, finished rows (the first is the header) and
/// the row and cell being filled.
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    /// The links of each row's cells: span ranges within the cell.
    links: Vec<Vec<CellLinks>>,
    row_links: Vec<CellLinks>,
}

type CellLinks = Vec<(Range<usize>, Arc<str>)>;

/// A link in a table's lines: (line, spans, address).
type TableLink = (usize, Range<usize>, Arc<str>);

/// The link being rendered.
struct OpenLink {
    url: String,
    /// Its text so far.
    text: String,
    /// The address for an OSC 8 hyperlink, when it may be one.
    clickable: Option<Arc<str>>,
    /// The span in `current` where its text starts on this line (set by its first text).
    start: Option<usize>,
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Stack of list counters (`None` for bullets).
    lists: Vec<Option<u64>>,
    quote: usize,
    /// The index of the last bar-only line a quote's paragraph break added.
    quote_blank: Option<usize>,
    code: Option<(String, String)>,
    link: Option<OpenLink>,
    /// Clickable links in `lines`.
    links: Vec<Link>,
    /// Clickable links in the table cell being filled.
    cell_links: CellLinks,
    pending_item: bool,
    table: Option<Table>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    /// Quote bars and list indentation.
    fn prefix(&self) -> Vec<Span<'static>> {
        let mut prefix = Vec::new();
        for _ in 0..self.quote {
            prefix.push(Span::styled("│ ", DIM));
        }
        if self.lists.len() > 1 {
            prefix.push(Span::raw("  ".repeat(self.lists.len() - 1)));
        }
        prefix
    }

    /// Notes where the open link's text starts on this line (the next span pushed).
    fn mark_link_start(&mut self) {
        if let Some(link) = &mut self.link
            && link.start.is_none()
        {
            link.start = Some(self.current.len());
        }
    }

    /// Records the open link's spans on this line (before the line or cell is taken, and
    /// at the link's end).
    fn record_link(&mut self) {
        let Some(link) = &mut self.link else { return };
        let Some(start) = link.start.take() else { return };
        let Some(url) = link.clickable.clone() else { return };
        let end = self.current.len();
        if start >= end {
            return;
        }
        if self.table.is_some() {
            self.cell_links.push((start..end, url));
        } else {
            self.links.push(Link {
                line: self.lines.len(),
                spans: start..end,
                url,
            });
        }
    }

    fn push_text(&mut self, text: &str) {
        if let Some(link) = &mut self.link {
            link.text.push_str(text);
        }
        if self.table.is_some() {
            self.mark_link_start();
            self.current.push(Span::styled(text.to_owned(), self.style()));
            return;
        }
        if self.current.is_empty() {
            self.current.extend(self.prefix());
            if self.pending_item {
                self.pending_item = false;
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => format!("{} ", ["•", "◦", "▪"][(depth.max(1) - 1) % 3]),
                };
                self.current.push(Span::styled(marker, Style::new().fg(Color::Cyan)));
            } else if !self.lists.is_empty() {
                self.current.push(Span::raw("  "));
            }
        }
        self.mark_link_start();
        self.current.push(Span::styled(text.to_owned(), self.style()));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() && self.table.is_none() {
            self.record_link();
            self.lines.push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    /// A paragraph break: a blank line (inside a quote, one that keeps the bars).
    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) && self.lists.is_empty() {
            if self.quote > 0 {
                self.quote_blank = Some(self.lines.len());
                let bars: Vec<Span<'static>> = (0..self.quote).map(|_| Span::styled("│", DIM)).collect();
                self.lines.push(Line::from(bars));
            } else {
                self.lines.push(Line::default());
            }
        }
    }

    fn event(&mut self, event: Md<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Md::Text(text) => code.push_str(&text),
                Md::End(TagEnd::CodeBlock) => self.code_block(),
                _ => {}
            }
            return;
        }
        match event {
            Md::Start(tag) => self.start(tag),
            Md::End(tag) => self.end(tag),
            Md::Text(text) => {
                let mut parts = text.split('\n').peekable();
                while let Some(part) = parts.next() {
                    if !part.is_empty() {
                        self.push_text(part);
                    }
                    if parts.peek().is_some() {
                        self.flush();
                    }
                }
            }
            Md::Code(code) => {
                let style = self.style().patch(Style::new().fg(Color::Yellow));
                if self.current.is_empty() {
                    self.push_text("");
                }
                if let Some(link) = &mut self.link {
                    link.text.push_str(&code);
                }
                self.mark_link_start();
                self.current.push(Span::styled(format!("`{code}`"), style));
            }
            Md::SoftBreak => self.push_text(" "),
            Md::HardBreak => self.flush(),
            Md::Rule => {
                self.flush();
                self.lines.push(Line::styled("─".repeat(40), DIM));
            }
            Md::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }),
            Md::Html(html) | Md::InlineHtml(html) => self.push_text(&html),
            _ => {}
        }
    }

    fn code_block(&mut self) {
        let (language, code) = self.code.take().unwrap_or_default();
        self.flush();
        let label = if language.is_empty() {
            "code".to_owned()
        } else {
            language.clone()
        };
        let prefix = self.prefix();
        let with_prefix = |spans: Vec<Span<'static>>| {
            let mut all = prefix.clone();
            all.extend(spans);
            Line::from(all)
        };
        self.lines
            .push(with_prefix(vec![Span::styled(format!("╭─ {label}"), DIM)]));
        for line in highlight(&code, &language) {
            let mut spans = vec![Span::styled("│ ", DIM)];
            spans.extend(line.spans);
            self.lines.push(with_prefix(spans));
        }
        self.lines.push(with_prefix(vec![Span::styled("╰─", DIM)]));
        if self.lists.is_empty() {
            self.lines.push(Line::default());
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.blank();
                let style = match level {
                    HeadingLevel::H1 => Style::new()
                        .fg(Color::Magenta)
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
                    _ => Style::new().add_modifier(Modifier::BOLD),
                };
                self.styles.push(style);
                let hashes = "#".repeat(level as usize);
                self.push_text(&format!("{hashes} "));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                self.pending_item = true;
            }
            Tag::Emphasis => self.styles.push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.styles.push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link {
                link_type, dest_url, ..
            } => {
                let url = dest_url.to_string();
                let target = if link_type == LinkType::Email && !url.starts_with("mailto:") {
                    format!("mailto:{url}")
                } else {
                    url.clone()
                };
                self.link = Some(OpenLink {
                    url,
                    text: String::new(),
                    clickable: super::hyperlink::clickable(&target).map(Arc::from),
                    start: None,
                });
                self.styles
                    .push(Style::new().fg(Color::Blue).add_modifier(Modifier::UNDERLINED));
            }
            Tag::Table(alignments) => {
                self.flush();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {
                self.current.clear();
                self.cell_links.clear();
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.blank(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                if self.quote_blank.take().is_some_and(|i| i + 1 == self.lines.len()) {
                    self.lines.pop();
                }
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                let address = self.link.as_ref().and_then(|link| {
                    let shown = link.url.strip_prefix("mailto:").unwrap_or(&link.url);
                    (!link.url.is_empty() && link.text.trim() != shown).then(|| format!(" ({})", link.url))
                });
                if let Some(address) = address {
                    if !self.current.is_empty() {
                        self.mark_link_start();
                    }
                    self.current.push(Span::styled(address, DIM));
                }
                self.record_link();
                self.link = None;
            }
            TagEnd::TableCell => {
                self.record_link();
                if let Some(table) = &mut self.table {
                    table.row.push(std::mem::take(&mut self.current));
                    table.row_links.push(std::mem::take(&mut self.cell_links));
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                    let links = std::mem::take(&mut table.row_links);
                    table.links.push(links);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let prefix = self.prefix();
                    let (lines, links) = table_lines(&table);
                    let first = self.lines.len();
                    for line in lines {
                        let mut spans = prefix.clone();
                        spans.extend(line.spans);
                        self.lines.push(Line::from(spans));
                    }
                    self.links.extend(links.into_iter().map(|(line, spans, url)| Link {
                        line: first + line,
                        spans: spans.start + prefix.len()..spans.end + prefix.len(),
                        url,
                    }));
                    self.blank();
                }
            }
            _ => {}
        }
    }
}

/// A table's lines: cells padded to their column's width and alignment, columns joined by
/// dim bars, the header bold and underlined by a rule; and the cells' links (line, spans).
fn table_lines(table: &Table) -> (Vec<Line<'static>>, Vec<TableLink>) {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    let cell_width = |cell: &[Span<'_>]| cell.iter().map(|s| super::wrap::width(&s.content)).sum::<usize>();
    let mut widths = vec![0; columns];
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell_width(cell));
        }
    }
    let mut out = Vec::new();
    let mut links = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let mut spans = Vec::new();
        for (i, width) in widths.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" │ ", DIM));
            }
            let cell = row.get(i).map_or(&[][..], Vec::as_slice);
            let pad = width - cell_width(cell);
            let (left, right) = match table.alignments.get(i) {
                Some(Alignment::Right) => (pad, 0),
                Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                _ => (0, pad),
            };
            if left > 0 {
                spans.push(Span::raw(" ".repeat(left)));
            }
            let base = spans.len();
            let cell_links = table.links.get(r).and_then(|row| row.get(i));
            for (range, url) in cell_links.into_iter().flatten() {
                links.push((out.len(), base + range.start..base + range.end, url.clone()));
            }
            for span in cell {
                let style = if r == 0 {
                    span.style.add_modifier(Modifier::BOLD)
                } else {
                    span.style
                };
                spans.push(Span::styled(span.content.clone(), style));
            }
            // The last column needs no padding on the right.
            if right > 0 && i + 1 < columns {
                spans.push(Span::raw(" ".repeat(right)));
            }
        }
        out.push(Line::from(spans));
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::from(Span::styled(rule.join("─┼─"), DIM)));
        }
    }
    (out, links)
}

#[cfg(test)]
mod tests {
    use super::{render, render_linked, render_streaming, render_streaming_linked, stable_len};

    /// Each clickable link as (line, the text of its spans, address).
    fn linked(text: &str) -> Vec<(usize, String, String)> {
        let (lines, links) = render_linked(text);
        links
            .iter()
            .map(|l| {
                let shown: String = lines[l.line].spans[l.spans.clone()]
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect();
                (l.line, shown, l.url.to_string())
            })
            .collect()
    }

    #[test]
    fn links_cover_their_text_and_address_and_only_safe_ones_count() {
        let s = |t: &str| t.to_owned();
        assert_eq!(
            linked("See [the `docs`](https://d.example) or <https://auto.example>, <me@mail.example>.\n"),
            [
                (0, s("the `docs` (https://d.example)"), s("https://d.example")),
                (0, s("https://auto.example"), s("https://auto.example")),
                (0, s("me@mail.example"), s("mailto:me@mail.example")),
            ]
        );
        // A list marker, quote bar or table padding is not part of the link.
        assert_eq!(
            linked("- [item](https://i.example)\n\n> [quoted](https://q.example)\n"),
            [
                (0, s("item (https://i.example)"), s("https://i.example")),
                (2, s("quoted (https://q.example)"), s("https://q.example")),
            ]
        );
        assert_eq!(
            linked("| a | b |\n|---|--:|\n| x | [cell](https://t.example) |\n"),
            [(2, s("cell (https://t.example)"), s("https://t.example"))]
        );
        // A hard break inside the text: the link is on both lines.
        assert_eq!(
            linked("[two\\\nlines](https://b.example)\n"),
            [
                (0, s("two"), s("https://b.example")),
                (1, s("lines (https://b.example)"), s("https://b.example"))
            ]
        );
        // Refused schemes and relative links are text only (their address still shows).
        let text = "[x](javascript:alert(1)) [y](file:///etc/passwd) [z](src/main.rs) [w](<https://s.example/a b>)\n";
        assert_eq!(
            linked(text),
            [(0, s("w (https://s.example/a b)"), s("https://s.example/a%20b"))]
        );
        assert_eq!(
            render(text)[0]
                .spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>(),
            "x (javascript:alert(1)) y (file:///etc/passwd) z (src/main.rs) w (https://s.example/a b)"
        );
        // Streaming: the complete blocks' links, none from the plain tail.
        let (_, links, _) = render_streaming_linked("[a](https://a.example)\n\n[b](https://b.example) still");
        assert_eq!(links.len(), 1);
        assert_eq!(&*links[0].url, "https://a.example");
    }

    fn plain(lines: &[ratatui::text::Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_common_markdown() {
        let lines = render(
            "# Title\n\nSome *em* and `code` with [a link](https://x.y).\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n",
        );
        assert_eq!(
            plain(&lines),
            [
                "# Title",
                "",
                "Some em and `code` with a link (https://x.y).",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second",
                "",
                "╭─ rust",
                "│ fn main() {}",
                "╰─",
            ]
        );
    }

    #[test]
    fn tables_render_aligned() {
        let lines =
            render("| name | size | kind |\n|:-----|-----:|:----:|\n| a.rs | 12 | file |\n| `src` | 1024 | dir |\n");
        assert_eq!(
            plain(&lines),
            [
                "name  │ size │ kind",
                "──────┼──────┼─────",
                "a.rs  │   12 │ file",
                "`src` │ 1024 │ dir",
            ]
        );
        assert!(
            lines[0]
                .spans
                .iter()
                .any(|s| s.content == "name" && s.style.add_modifier.contains(ratatui::style::Modifier::BOLD))
        );
    }

    #[test]
    fn quotes_nested_lists_and_links() {
        let lines = render(
            "> first\\\n> line\n>\n> second para\n\n- top\n  - nested\n    - deeper\n- back\n\n1. one\n   1. inner\n\nSee [the docs](https://d.example) or <https://auto.example>.\n",
        );
        assert_eq!(
            plain(&lines),
            [
                "│ first",
                "│ line",
                "│",
                "│ second para",
                "",
                "• top",
                "  ◦ nested",
                "    ▪ deeper",
                "• back",
                "",
                "1. one",
                "  1. inner",
                "",
                "See the docs (https://d.example) or https://auto.example.",
            ]
        );
    }

    /// The document fed chunk by chunk: the complete part of every frame is a prefix of the
    /// next frame's and of the final rendering, and only ever grows.
    #[test]
    fn streaming_never_flickers() {
        let doc = "# Plan\n\nSome **bold** text and a [link](https://x.y).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n- item one\n- item *two*\n  - nested\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\nAfter the code.\n\n> quoted\n> text\n\nThe end.";
        let finished = plain(&render(doc));
        for step in [1, 3, 7, 16] {
            let mut previous: Vec<String> = Vec::new();
            let mut end = 0;
            while end < doc.len() {
                end = (end + step).min(doc.len());
                while !doc.is_char_boundary(end) {
                    end += 1;
                }
                let (lines, stable) = render_streaming(&doc[..end]);
                let stable = plain(&lines[..stable]);
                assert!(
                    stable.len() >= previous.len() && stable[..previous.len()] == previous[..],
                    "step {step} at {end}: {previous:?} became {stable:?}"
                );
                assert_eq!(finished[..stable.len()], stable[..], "step {step} at {end}");
                previous = stable;
            }
        }
        // A half-received table is plain text until its block ends.
        let (lines, stable) = render_streaming("Intro.\n\n| a | b |\n|---|");
        assert_eq!(stable, 1);
        assert_eq!(plain(&lines), ["Intro.", "", "| a | b |", "|---|"]);
        // An open fence already shows as code.
        let (lines, _) = render_streaming("```rust\nfn a() {}\n");
        assert_eq!(plain(&lines), ["╭─ rust", "│ fn a() {}", "╰─"]);
        assert_eq!(stable_len("para\n```\ncode\n"), 5, "the fence starts a block");
    }
}
