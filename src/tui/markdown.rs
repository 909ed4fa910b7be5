//! Markdown to styled lines: headings, lists, emphasis, inline code, links, block quotes and
//! fenced code blocks with syntax highlighting (syntect, pure-Rust regex). The result is
//! unwrapped; the transcript wraps it to the width.

use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event as Md, HeadingLevel, Options, Parser, Tag, TagEnd};
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

/// Renders Markdown to lines.
pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r
        .lines
        .last()
        .is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
    {
        r.lines.pop();
    }
    r.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Stack of list counters (`None` for bullets).
    lists: Vec<Option<u64>>,
    quote: usize,
    code: Option<(String, String)>,
    link: Option<String>,
    pending_item: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn prefix(&self) -> Vec<Span<'static>> {
        let mut prefix = Vec::new();
        for _ in 0..self.quote {
            prefix.push(Span::styled("│ ", Style::new().fg(Color::DarkGray)));
        }
        if !self.lists.is_empty() {
            prefix.push(Span::raw("  ".repeat(self.lists.len() - 1)));
        }
        prefix
    }

    fn push_text(&mut self, text: &str) {
        if self.current.is_empty() {
            self.current.extend(self.prefix());
            if self.pending_item {
                self.pending_item = false;
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_owned(),
                };
                self.current.push(Span::styled(marker, Style::new().fg(Color::Cyan)));
            } else if !self.lists.is_empty() {
                self.current.push(Span::raw("  "));
            }
        }
        self.current.push(Span::styled(text.to_owned(), self.style()));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines.push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) && self.lists.is_empty() {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Md<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Md::Text(text) => code.push_str(&text),
                Md::End(TagEnd::CodeBlock) => {
                    let (language, code) = self.code.take().unwrap_or_default();
                    self.flush();
                    let label = if language.is_empty() {
                        "code".to_owned()
                    } else {
                        language.clone()
                    };
                    self.lines
                        .push(Line::styled(format!("╭─ {label}"), Style::new().fg(Color::DarkGray)));
                    for line in highlight(&code, &language) {
                        let mut spans = vec![Span::styled("│ ", Style::new().fg(Color::DarkGray))];
                        spans.extend(line.spans);
                        self.lines.push(Line::from(spans));
                    }
                    self.lines.push(Line::styled("╰─", Style::new().fg(Color::DarkGray)));
                    self.lines.push(Line::default());
                }
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
                self.current.push(Span::styled(format!("`{code}`"), style));
            }
            Md::SoftBreak => self.push_text(" "),
            Md::HardBreak => self.flush(),
            Md::Rule => {
                self.flush();
                self.lines
                    .push(Line::styled("─".repeat(40), Style::new().fg(Color::DarkGray)));
            }
            Md::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }),
            Md::Html(html) | Md::InlineHtml(html) => self.push_text(&html),
            _ => {}
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
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.styles
                    .push(Style::new().fg(Color::Blue).add_modifier(Modifier::UNDERLINED));
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
                if let Some(url) = self.link.take() {
                    self.current
                        .push(Span::styled(format!(" ({url})"), Style::new().fg(Color::DarkGray)));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::render;

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
}
