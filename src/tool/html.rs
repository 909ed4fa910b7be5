//! HTML → Markdown for `fetch`, safe on hostile pages.
//!
//! htmd recurses once per element level (a few KB of stack each), and html5ever's tree builder
//! does work proportional to the nesting depth for every tag, so a page of deeply nested
//! elements either overflows the stack (2,500 `<div>`s did, aborting brute) or takes minutes
//! (100,000). Three guards, cheapest first:
//!
//! 1. [`flatten`], a linear pass over the HTML text, drops start and end tags nested deeper
//!    than [`MAX_DEPTH`] and keeps their text. It reads tags, comments and raw text the way the
//!    HTML tokenizer does and models the common implied end tags (`<p>`, `<li>`, table cells),
//!    so ordinary pages pass unchanged. It is a model of the tree builder, not the tree builder:
//!    a page built to fool it only gets slow, which the next two guards and the caller's time
//!    budget handle.
//! 2. The parser is fed in small chunks and checks the stop token between them.
//! 3. After parsing, any element still deeper than [`DOM_DEPTH`] has its subtree replaced by
//!    its text, so the recursive converter never goes deeper than that, whatever the parser
//!    built. [`STACK`] is enough stack for that depth.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use html5ever::tendril::{StrTendril, TendrilSink};
use markup5ever_rcdom::{Node, NodeData, RcDom};
use tokio_util::sync::CancellationToken;

/// Elements nested deeper than this lose their tags in [`flatten`] (their text stays).
pub const MAX_DEPTH: usize = 200;
/// No element of the parsed page is deeper than this when the converter walks it.
pub const DOM_DEPTH: usize = 256;
/// Stack for a thread running [`to_markdown`]: htmd takes a few KB per level in debug builds
/// ([`DOM_DEPTH`] nested `<code>` elements fit in 2 MB), so this leaves a wide margin.
pub const STACK: usize = 16 << 20;
/// Bytes given to the parser between two looks at the stop token.
const PARSE_CHUNK: usize = 4096;

/// The conversion was stopped through its token before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the HTML conversion was stopped")]
pub struct Stopped;

/// A converted page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markdown {
    pub text: String,
    /// Tags dropped or elements flattened because they were nested too deep (0 on ordinary
    /// pages); the caller tells the model, since structure was lost.
    pub flattened: usize,
}

/// Converts a page to Markdown, giving up with [`Stopped`] soon after `stop` is cancelled.
/// Runs on the calling thread, which needs [`STACK`] bytes of stack for the deepest pages.
pub fn to_markdown(html: &str, stop: &CancellationToken) -> Result<Markdown, Stopped> {
    let flat = flatten(html, MAX_DEPTH);
    let document = parse(&flat.html, stop)?;
    let capped = cap_depth(&document, DOM_DEPTH, stop)?;
    if stop.is_cancelled() {
        return Err(Stopped);
    }
    let text = htmd::HtmlToMarkdown::new().tree_to_markdown(&document);
    Ok(Markdown {
        text,
        flattened: flat.dropped + capped,
    })
}

/// Parses in [`PARSE_CHUNK`] pieces so a stop request is seen quickly even when the tree
/// builder is slow.
fn parse(html: &str, stop: &CancellationToken) -> Result<Rc<Node>, Stopped> {
    let mut parser = html5ever::parse_document(RcDom::default(), html5ever::ParseOpts::default());
    let mut rest = html;
    while !rest.is_empty() {
        if stop.is_cancelled() {
            return Err(Stopped);
        }
        let mut cut = rest.len().min(PARSE_CHUNK);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(head));
        rest = tail;
    }
    Ok(parser.finish().document)
}

/// Replaces the children of every element at depth `limit` by the text of its subtree (one
/// space where an element boundary was). Iterative, so any depth is fine. Returns how many
/// elements were removed.
fn cap_depth(document: &Rc<Node>, limit: usize, stop: &CancellationToken) -> Result<usize, Stopped> {
    let mut removed = 0;
    let mut work = vec![(document.clone(), 0usize)];
    let mut steps = 0usize;
    while let Some((node, depth)) = work.pop() {
        steps += 1;
        if steps.is_multiple_of(4096) && stop.is_cancelled() {
            return Err(Stopped);
        }
        if depth >= limit && matches!(node.data, NodeData::Element { .. }) {
            removed += keep_only_text(&node);
            continue;
        }
        work.extend(node.children.borrow().iter().map(|child| (child.clone(), depth + 1)));
    }
    Ok(removed)
}

/// Makes the text nodes below `node` its only children; returns the elements removed.
fn keep_only_text(node: &Rc<Node>) -> usize {
    let old = std::mem::take(&mut *node.children.borrow_mut());
    let mut work: Vec<Rc<Node>> = old.into_iter().rev().collect();
    let mut texts: Vec<Rc<Node>> = Vec::new();
    let mut removed = 0;
    let mut gap = false;
    while let Some(child) = work.pop() {
        match &child.data {
            NodeData::Text { .. } => {
                if gap && let Some(NodeData::Text { contents }) = texts.last().map(|t| &t.data) {
                    contents.borrow_mut().push_char(' ');
                }
                gap = false;
                child.parent.set(Some(Rc::downgrade(node)));
                texts.push(child);
            }
            NodeData::Element { name, .. } => {
                removed += 1;
                gap = true;
                // Take the children out first, so dropping `child` has nothing left to free.
                let kids = std::mem::take(&mut *child.children.borrow_mut());
                if !matches!(&*name.local, "script" | "style" | "template" | "noscript") {
                    work.extend(kids.into_iter().rev());
                }
            }
            _ => {}
        }
    }
    *node.children.borrow_mut() = texts;
    removed
}

/// The page text with every tag, comment, script and style removed and a line break for each
/// block boundary: the fallback when the Markdown conversion cannot finish. Linear time.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut scanner = Scanner::new(html);
    while let Some(token) = scanner.next() {
        match token.kind {
            Kind::Text => push_decoded(&mut out, &html[token.range]),
            Kind::Start { .. } | Kind::End => {
                let tag = Tag::of(token.name);
                if matches!(token.kind, Kind::Start { .. }) && tag.has(RAW_TEXT) {
                    let text = scanner.raw_text(token.name);
                    if tag.has(KEEP_RAW_TEXT) {
                        push_decoded(&mut out, &html[text]);
                    }
                } else if !tag.has(PHRASING) && !out.ends_with('\n') && !out.is_empty() {
                    out.push('\n');
                }
            }
            Kind::Markup | Kind::Unfinished => {}
        }
    }
    out
}

/// Appends text with the most common character references decoded.
fn push_decoded(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let known = [
            ("&amp;", "&"),
            ("&lt;", "<"),
            ("&gt;", ">"),
            ("&quot;", "\""),
            ("&#39;", "'"),
            ("&apos;", "'"),
            ("&nbsp;", " "),
        ];
        match known.iter().find(|(name, _)| rest.starts_with(name)) {
            Some((name, value)) => {
                out.push_str(value);
                rest = &rest[name.len()..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
}

/// The result of [`flatten`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flattened<'a> {
    /// The page, borrowed when nothing was dropped.
    pub html: Cow<'a, str>,
    /// Start tags dropped for being nested deeper than the limit.
    pub dropped: usize,
}

/// Drops the start and end tags of elements nested deeper than `limit` (keeping everything
/// else, text included) in one linear pass; see the module comment for what it models.
pub fn flatten(html: &str, limit: usize) -> Flattened<'_> {
    let mut open = OpenElements::new(limit);
    // Start tags dropped and not yet matched by an end tag, by lowercase name.
    let mut excess: HashMap<String, usize> = HashMap::new();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut dropped = 0;
    let mut drop_range = |range: Range<usize>, separator: &str, out: &mut Option<String>| {
        let out = out.get_or_insert_with(|| String::with_capacity(html.len()));
        out.push_str(&html[copied..range.start]);
        out.push_str(separator);
        copied = range.end;
    };
    let mut scanner = Scanner::new(html);
    while let Some(token) = scanner.next() {
        match token.kind {
            Kind::Start { self_closing } => {
                let tag = Tag::of(token.name);
                let mut foreign = false;
                if open.in_foreign() {
                    let font_breaks_out = token.name.eq_ignore_ascii_case("font") && {
                        let raw = html[token.range.clone()].to_ascii_lowercase();
                        ["color", "face", "size"].iter().any(|a| raw.contains(a))
                    };
                    if tag.has(BREAKOUT) || font_breaks_out {
                        open.leave_foreign();
                    } else {
                        foreign = true;
                    }
                }
                if tag.has(FOREIGN_ROOT) {
                    foreign = true;
                }
                if foreign {
                    if self_closing {
                        continue;
                    }
                } else {
                    if tag.has(VOID | NEVER_OPEN) {
                        continue;
                    }
                    if tag.has(RAW_TEXT) && (open.select == 0 || tag.has(SCRIPT)) {
                        scanner.raw_text(token.name);
                        continue;
                    }
                    if tag.has(PLAINTEXT) {
                        break;
                    }
                    if tag.has(TABLE_PART) && !tag.has(TABLE) && open.tables == 0 {
                        // Outside a table the parser ignores these.
                        continue;
                    }
                    open.close_implied(token.name, tag);
                }
                if open.stack.len() >= limit {
                    dropped += 1;
                    *excess.entry(token.name.to_ascii_lowercase()).or_default() += 1;
                    drop_range(token.range, tag.separator(), &mut out);
                } else {
                    open.push(token.name, tag, foreign);
                }
            }
            Kind::End => {
                if !excess.is_empty()
                    && let Some(count) = excess.get_mut(&token.name.to_ascii_lowercase())
                    && *count > 0
                {
                    *count -= 1;
                    drop_range(token.range, Tag::of(token.name).separator(), &mut out);
                    continue;
                }
                open.close(token.name);
            }
            Kind::Text | Kind::Markup => {}
            Kind::Unfinished => break,
        }
        if std::mem::take(&mut open.closed_deep) {
            // Every dropped element was inside the element just closed.
            excess.clear();
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&html[copied..]);
            Flattened {
                html: Cow::Owned(out),
                dropped,
            }
        }
        None => Flattened {
            html: Cow::Borrowed(html),
            dropped,
        },
    }
}

/// One entry of [`OpenElements`].
#[derive(Debug, Clone, Copy)]
struct Open<'a> {
    name: &'a str,
    tag: Tag,
    /// An SVG or MathML element (where `<x/>` closes itself).
    foreign: bool,
}

/// What [`flatten`] believes the tree builder's stack of open elements holds. Where it cannot
/// be exact it errs towards more open elements, so a page cannot hide depth from it by the
/// rules it models.
struct OpenElements<'a> {
    stack: Vec<Open<'a>>,
    limit: usize,
    /// Entries that are `select` (most raw-text tags are ignored inside it).
    select: usize,
    /// Entries that are `table`.
    tables: usize,
    /// Entries that are `p`.
    paragraphs: usize,
    /// Set when entries at the depth limit were popped.
    closed_deep: bool,
}

impl<'a> OpenElements<'a> {
    fn new(limit: usize) -> Self {
        Self {
            stack: Vec::new(),
            limit,
            select: 0,
            tables: 0,
            paragraphs: 0,
            closed_deep: false,
        }
    }

    fn push(&mut self, name: &'a str, tag: Tag, foreign: bool) {
        self.count(tag, foreign, 1);
        self.stack.push(Open { name, tag, foreign });
    }

    fn count(&mut self, tag: Tag, foreign: bool, up: isize) {
        if foreign {
            return;
        }
        for (flag, counter) in [
            (SELECT, &mut self.select),
            (TABLE, &mut self.tables),
            (PARAGRAPH, &mut self.paragraphs),
        ] {
            if tag.has(flag) {
                *counter = counter.saturating_add_signed(up);
            }
        }
    }

    /// Pops everything from `index` up.
    fn truncate(&mut self, index: usize) {
        if self.stack.len() >= self.limit && index < self.limit {
            self.closed_deep = true;
        }
        while self.stack.len() > index {
            if let Some(open) = self.stack.pop() {
                self.count(open.tag, open.foreign, -1);
            }
        }
    }

    /// Removes one entry, leaving those above it open.
    fn remove(&mut self, index: usize) {
        let open = self.stack.remove(index);
        self.count(open.tag, open.foreign, -1);
    }

    /// The current node is SVG or MathML (and not a point where HTML content starts again).
    fn in_foreign(&self) -> bool {
        self.stack.last().is_some_and(|o| o.foreign && !o.tag.has(INTEGRATION))
    }

    /// What an HTML tag inside SVG or MathML does: pops the foreign elements.
    fn leave_foreign(&mut self) {
        let keep = self
            .stack
            .iter()
            .rposition(|o| !o.foreign || o.tag.has(INTEGRATION))
            .map_or(0, |i| i + 1);
        self.truncate(keep);
    }

    /// The index of the topmost entry named like one of `names`, searching down from the top
    /// and giving up at an entry with any of the `boundary` flags.
    fn find(&self, names: &[&str], boundary: u32) -> Option<usize> {
        for (index, open) in self.stack.iter().enumerate().rev() {
            if names.iter().any(|n| open.name.eq_ignore_ascii_case(n)) {
                return Some(index);
            }
            if open.tag.has(boundary) {
                return None;
            }
        }
        None
    }

    fn close_paragraph(&mut self) {
        if self.paragraphs > 0
            && let Some(index) = self.find(&["p"], SCOPE | BUTTON_SCOPE)
        {
            self.truncate(index);
        }
    }

    fn top_is(&self, name: &str) -> bool {
        self.stack.last().is_some_and(|o| o.name.eq_ignore_ascii_case(name))
    }

    /// The end tags an HTML start tag implies: a new `<li>` closes the open one, and so on.
    fn close_implied(&mut self, name: &str, tag: Tag) {
        let implied = match Tag::lower(name).as_deref() {
            Some("li") => self.find(&["li"], LI_BOUNDARY),
            Some("dt" | "dd") => self.find(&["dt", "dd"], LI_BOUNDARY),
            Some("tr") => self.find(&["tr"], TABLE_SCOPE),
            Some("td" | "th") => self.find(&["td", "th"], TABLE_SCOPE | ROW),
            Some("option") => self.top_is("option").then(|| self.stack.len() - 1),
            Some("optgroup") => {
                if self.top_is("option") {
                    self.truncate(self.stack.len() - 1);
                }
                self.top_is("optgroup").then(|| self.stack.len() - 1)
            }
            _ => None,
        };
        if let Some(index) = implied {
            self.truncate(index);
        }
        if tag.has(CLOSES_P) {
            self.close_paragraph();
        }
    }

    /// Applies an end tag.
    fn close(&mut self, name: &str) {
        let tag = Tag::of(name);
        if tag.has(NEVER_OPEN) || (tag.has(TABLE_PART) && self.tables == 0) {
            return;
        }
        if tag.has(FORMATTING) || name.eq_ignore_ascii_case("form") {
            // The adoption agency (and `</form>`) keep what was opened inside; removing only
            // this entry never counts fewer open elements than the parser has.
            if let Some(index) = self.find(&[name], SCOPE) {
                self.remove(index);
            }
            return;
        }
        let boundary = if !tag.has(SCOPED_END) {
            SPECIAL
        } else if tag.has(TABLE_PART) {
            TABLE_SCOPE
        } else if tag.has(PARAGRAPH) {
            SCOPE | BUTTON_SCOPE
        } else if name.eq_ignore_ascii_case("li") {
            SCOPE | LIST_SCOPE
        } else {
            SCOPE
        };
        if let Some(index) = self.find(&[name], boundary) {
            self.truncate(index);
        }
    }
}

/// Flags for the tag names [`flatten`] treats specially.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tag(u32);

const VOID: u32 = 1;
const RAW_TEXT: u32 = 1 << 1;
const SCRIPT: u32 = 1 << 2;
const PLAINTEXT: u32 = 1 << 3;
/// `svg` and `math`: their content follows foreign-content rules.
const FOREIGN_ROOT: u32 = 1 << 4;
const SELECT: u32 = 1 << 5;
const PARAGRAPH: u32 = 1 << 6;
/// The HTML spec's "special" category: end tags of other elements stop at these.
const SPECIAL: u32 = 1 << 7;
/// Ends the default "has an element in scope" search.
const SCOPE: u32 = 1 << 8;
const BUTTON_SCOPE: u32 = 1 << 9;
const LIST_SCOPE: u32 = 1 << 10;
const TABLE_SCOPE: u32 = 1 << 11;
/// `tr`: where a search for an open cell stops.
const ROW: u32 = 1 << 12;
const TABLE_PART: u32 = 1 << 13;
const FORMATTING: u32 = 1 << 14;
/// A start tag that closes an open `<p>`.
const CLOSES_P: u32 = 1 << 15;
/// Special elements other than `address`, `div` and `p`: where a search for an open `<li>`
/// stops.
const LI_BOUNDARY: u32 = 1 << 16;
/// Inline: dropping its tag needs no line break.
const PHRASING: u32 = 1 << 17;
/// Raw text that is page text (`<title>`, `<textarea>`), as opposed to code.
const KEEP_RAW_TEXT: u32 = 1 << 18;
/// Its end tag pops up to the element if it is in scope (special elements and a few more).
const SCOPED_END: u32 = 1 << 19;
const TABLE: u32 = 1 << 20;
/// An HTML tag that, inside SVG or MathML, closes the foreign elements.
const BREAKOUT: u32 = 1 << 21;
/// Inside SVG or MathML, where HTML content starts again.
const INTEGRATION: u32 = 1 << 22;
/// `html`, `head`, `body`, `frameset`: the parser opens each once and then ignores them.
const NEVER_OPEN: u32 = 1 << 23;

impl Tag {
    fn has(self, flags: u32) -> bool {
        self.0 & flags != 0
    }

    /// ASCII-lowercase `name`, or `None` when it is too long to be a name listed here.
    fn lower(name: &str) -> Option<String> {
        (name.len() <= 16).then(|| name.to_ascii_lowercase())
    }

    fn separator(self) -> &'static str {
        if self.has(PHRASING) { "" } else { "\n" }
    }

    fn of(name: &str) -> Tag {
        let Some(lower) = Tag::lower(name) else {
            return Tag(PHRASING);
        };
        // Special elements other than address, div and p also stop a search for an open li.
        let special = SPECIAL | SCOPED_END | LI_BOUNDARY;
        let flags = match lower.as_str() {
            "br" | "embed" | "img" | "meta" => VOID | special | BREAKOUT,
            "hr" => VOID | special | BREAKOUT | CLOSES_P,
            "area" | "base" | "col" | "input" | "keygen" | "link" | "param" | "source" | "track" | "wbr"
            | "basefont" | "bgsound" | "frame" | "isindex" => VOID | special,
            "image" => VOID,
            "script" => RAW_TEXT | SCRIPT | special,
            "style" | "iframe" | "noembed" | "noframes" | "noscript" => RAW_TEXT | special,
            "title" => RAW_TEXT | KEEP_RAW_TEXT | special | SCOPE | INTEGRATION,
            "textarea" => RAW_TEXT | KEEP_RAW_TEXT | special,
            "xmp" => RAW_TEXT | KEEP_RAW_TEXT | special | CLOSES_P,
            "plaintext" => PLAINTEXT | special | CLOSES_P,
            "svg" | "math" => FOREIGN_ROOT,
            "select" => SELECT | special,
            "p" => PARAGRAPH | SPECIAL | SCOPED_END | CLOSES_P | BREAKOUT,
            "address" => SPECIAL | SCOPED_END | CLOSES_P,
            "div" => SPECIAL | SCOPED_END | CLOSES_P | BREAKOUT,
            "applet" | "marquee" | "object" => special | SCOPE,
            "caption" => special | SCOPE | TABLE_PART,
            "html" => special | SCOPE | TABLE_SCOPE | NEVER_OPEN,
            "template" => special | SCOPE | TABLE_SCOPE,
            // In quirks mode (no doctype) `<table>` leaves an open `<p>` open: not CLOSES_P.
            "table" => special | SCOPE | TABLE_SCOPE | TABLE_PART | TABLE | BREAKOUT,
            "td" | "th" => special | SCOPE | TABLE_PART,
            "tr" => special | ROW | TABLE_PART,
            "tbody" | "thead" | "tfoot" | "colgroup" => special | TABLE_PART,
            "button" => special | BUTTON_SCOPE,
            "ol" | "ul" => special | LIST_SCOPE | CLOSES_P | BREAKOUT,
            "li" | "dd" | "dt" | "dl" | "blockquote" | "center" | "menu" | "pre" | "listing" | "h1" | "h2" | "h3"
            | "h4" | "h5" | "h6" => special | CLOSES_P | BREAKOUT,
            "article" | "aside" | "details" | "dir" | "fieldset" | "figcaption" | "figure" | "footer" | "header"
            | "hgroup" | "main" | "nav" | "section" | "summary" | "form" => special | CLOSES_P,
            "dialog" | "search" => SCOPED_END | CLOSES_P,
            "body" | "head" => special | NEVER_OPEN | BREAKOUT,
            "frameset" => special | NEVER_OPEN,
            "mi" | "mo" | "mn" | "ms" | "mtext" | "annotation-xml" | "foreignobject" | "desc" => SCOPE | INTEGRATION,
            "b" | "big" | "code" | "em" | "i" | "nobr" | "s" | "small" | "strike" | "strong" | "tt" | "u" => {
                FORMATTING | PHRASING | BREAKOUT
            }
            "a" | "font" => FORMATTING | PHRASING,
            "ruby" | "span" | "sub" | "sup" | "var" => PHRASING | BREAKOUT,
            "abbr" | "bdi" | "bdo" | "cite" | "data" | "dfn" | "kbd" | "label" | "mark" | "q" | "samp" | "time" => {
                PHRASING
            }
            _ => 0,
        };
        Tag(flags)
    }
}

/// What a [`Token`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Start {
        self_closing: bool,
    },
    End,
    /// A comment, doctype, processing instruction or other markup that opens no element.
    Markup,
    /// The rest of the page, inside a tag that never ends (the tokenizer drops it).
    Unfinished,
}

/// One piece of the page: its kind, its tag name (empty unless a tag) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token<'a> {
    kind: Kind,
    name: &'a str,
    range: Range<usize>,
}

/// Splits HTML into tags and text following the HTML tokenizer's rules for where a tag, a
/// comment or raw text ends; everything here is linear in the input.
struct Scanner<'a> {
    html: &'a str,
    pos: usize,
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

impl<'a> Scanner<'a> {
    fn new(html: &'a str) -> Self {
        Self { html, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.html.as_bytes()
    }

    /// The position of `needle` at or after `from`, if any.
    fn find(&self, from: usize, needle: &str) -> Option<usize> {
        self.html.get(from..)?.find(needle).map(|i| from + i)
    }

    fn token(&mut self, kind: Kind, name: Range<usize>, end: usize) -> Token<'a> {
        let start = self.pos;
        self.pos = end;
        Token {
            kind,
            name: &self.html[name],
            range: start..end,
        }
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.bytes();
        let start = self.pos;
        if start >= bytes.len() {
            return None;
        }
        if bytes[start] != b'<' {
            let end = self.find(start, "<").unwrap_or(bytes.len());
            return Some(self.token(Kind::Text, 0..0, end));
        }
        let after = |n: usize| bytes.get(start + n).copied();
        match after(1) {
            Some(b'!') if self.html[start..].starts_with("<!--") => {
                let end = self.comment_end(start + 4);
                Some(self.token(Kind::Markup, 0..0, end))
            }
            Some(b'!' | b'?') => {
                let end = self.find(start + 2, ">").map_or(bytes.len(), |i| i + 1);
                Some(self.token(Kind::Markup, 0..0, end))
            }
            Some(b'/') => match after(2) {
                Some(c) if c.is_ascii_alphabetic() => Some(self.tag(start + 2, Kind::End)),
                Some(b'>') => Some(self.token(Kind::Markup, 0..0, start + 3)),
                None => Some(self.token(Kind::Text, 0..0, bytes.len())),
                Some(_) => {
                    let end = self.find(start + 2, ">").map_or(bytes.len(), |i| i + 1);
                    Some(self.token(Kind::Markup, 0..0, end))
                }
            },
            Some(c) if c.is_ascii_alphabetic() => Some(self.tag(start + 1, Kind::Start { self_closing: false })),
            _ => {
                let end = self.find(start + 1, "<").unwrap_or(bytes.len());
                Some(self.token(Kind::Text, 0..0, end))
            }
        }
    }

    /// Where a comment whose text starts at `from` ends: `-->`, `--!>`, or the abrupt `<!-->`
    /// and `<!--->`.
    fn comment_end(&self, from: usize) -> usize {
        let bytes = self.bytes();
        let rest = &bytes[from.min(bytes.len())..];
        if rest.starts_with(b">") {
            return from + 1;
        }
        if rest.starts_with(b"->") {
            return from + 2;
        }
        let mut at = from;
        while let Some(dashes) = self.find(at, "--") {
            match bytes.get(dashes + 2) {
                Some(b'>') => return dashes + 3,
                Some(b'!') if bytes.get(dashes + 3) == Some(&b'>') => return dashes + 4,
                _ => at = dashes + 1,
            }
        }
        bytes.len()
    }

    /// A start or end tag whose name starts at `name_start`: the tokenizer's tag, attribute
    /// and quoting states, just enough to find the `>` that really ends it.
    fn tag(&mut self, name_start: usize, kind: Kind) -> Token<'a> {
        #[derive(Clone, Copy)]
        enum State {
            BeforeName,
            Name,
            AfterName,
            BeforeValue,
            Quoted(u8),
            Unquoted,
            AfterQuoted,
            SelfClosing,
        }
        let bytes = self.bytes();
        let mut i = name_start;
        while i < bytes.len() && !is_space(bytes[i]) && bytes[i] != b'/' && bytes[i] != b'>' {
            i += 1;
        }
        let name = name_start..i;
        let mut state = State::BeforeName;
        while i < bytes.len() {
            let c = bytes[i];
            match state {
                State::BeforeName => match c {
                    b'/' => state = State::SelfClosing,
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    c if is_space(c) => {}
                    _ => state = State::Name,
                },
                State::Name => match c {
                    b'/' => state = State::SelfClosing,
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    b'=' => state = State::BeforeValue,
                    c if is_space(c) => state = State::AfterName,
                    _ => {}
                },
                State::AfterName => match c {
                    b'/' => state = State::SelfClosing,
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    b'=' => state = State::BeforeValue,
                    c if is_space(c) => {}
                    _ => state = State::Name,
                },
                State::BeforeValue => match c {
                    b'"' | b'\'' => state = State::Quoted(c),
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    c if is_space(c) => {}
                    _ => state = State::Unquoted,
                },
                State::Quoted(quote) => {
                    match bytes[i..].iter().position(|&b| b == quote) {
                        Some(offset) => i += offset,
                        None => break,
                    }
                    state = State::AfterQuoted;
                }
                State::Unquoted => match c {
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    c if is_space(c) => state = State::BeforeName,
                    _ => {}
                },
                State::AfterQuoted => match c {
                    b'/' => state = State::SelfClosing,
                    b'>' => return self.finish_tag(kind, name, i + 1, false),
                    c if is_space(c) => state = State::BeforeName,
                    _ => state = State::Name,
                },
                State::SelfClosing => match c {
                    b'>' => return self.finish_tag(kind, name, i + 1, true),
                    b'/' => {}
                    c if is_space(c) => state = State::BeforeName,
                    _ => state = State::Name,
                },
            }
            i += 1;
        }
        // The page ends inside the tag: the tokenizer drops it and nothing follows.
        self.token(Kind::Unfinished, 0..0, bytes.len())
    }

    fn finish_tag(&mut self, kind: Kind, name: Range<usize>, end: usize, self_closing: bool) -> Token<'a> {
        let kind = match kind {
            Kind::Start { .. } => Kind::Start { self_closing },
            other => other,
        };
        self.token(kind, name, end)
    }

    /// After the start tag of a raw-text element (`<script>`, `<style>`, …): skips its text up
    /// to the matching end tag (which stays for [`Scanner::next`]) and returns the text's range.
    fn raw_text(&mut self, name: &str) -> Range<usize> {
        let bytes = self.bytes();
        let start = self.pos;
        let mut at = start;
        while let Some(open) = self.find(at, "</") {
            let name_end = open + 2 + name.len();
            let matches = bytes
                .get(open + 2..name_end)
                .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name.as_bytes()));
            let ends = bytes
                .get(name_end)
                .is_some_and(|&c| is_space(c) || c == b'/' || c == b'>');
            if matches && ends {
                self.pos = open;
                return start..open;
            }
            at = open + 2;
        }
        self.pos = bytes.len();
        start..bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(tag: &str, depth: usize, inner: &str) -> String {
        format!(
            "{}{inner}{}",
            format!("<{tag}>").repeat(depth),
            format!("</{tag}>").repeat(depth)
        )
    }

    fn depth_of(node: &Rc<Node>) -> usize {
        let mut deepest = 0;
        let mut work = vec![(node.clone(), 0)];
        while let Some((node, depth)) = work.pop() {
            deepest = deepest.max(depth);
            work.extend(node.children.borrow().iter().map(|c| (c.clone(), depth + 1)));
        }
        deepest
    }

    #[test]
    fn ordinary_pages_pass_unchanged() {
        let pages = [
            "<html><head><title>T <b></title><script>if (a<b && c>d) {}</script></head><body><p>one<p>two<ul><li>a<li>b</ul></body></html>".to_owned(),
            format!("<table>{}</table>", "<tr><td>cell<td>cell".repeat(500)),
            format!("<ul>{}</ul>", "<li>item".repeat(1000)),
            format!("<div>{}</div>", "<p>para <b>bold</b> <a href=\"x>y\">link</a>".repeat(1000)),
            format!("<dl>{}</dl>", "<dt>term<dd>def".repeat(500)),
            format!("<select>{}</select>", "<option>o".repeat(500)),
            format!("<svg>{}</svg>", "<path d='M0 0'/>".repeat(500)),
            "<!-- <div><div> --> <!--> <div> <!-- a --!> </div> <p/>x <br/> <img src=x>".to_owned(),
            nested("div", MAX_DEPTH, "deep but allowed"),
        ];
        for page in &pages {
            let flat = flatten(page, MAX_DEPTH);
            assert_eq!(flat.dropped, 0, "{}", &page[..page.len().min(80)]);
            assert!(matches!(flat.html, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn deep_nesting_is_flattened_and_text_kept() {
        let page = nested("div", 2500, "hello");
        let flat = flatten(&page, MAX_DEPTH);
        assert_eq!(flat.dropped, 2300);
        assert_eq!(flat.html.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(flat.html.matches("</div>").count(), MAX_DEPTH);
        assert!(flat.html.contains("hello"));
        let mixed = format!("{}{}", nested("section", 300, "<p>x</p>"), "<p>after</p>");
        let flat = flatten(&mixed, MAX_DEPTH);
        assert_eq!(flat.dropped, 101, "100 sections and the paragraph in the deepest");
        assert!(
            flat.html.ends_with("</section><p>after</p>"),
            "the page after the deep part is intact"
        );
    }

    #[test]
    fn tags_the_tokenizer_would_see_through_are_counted() {
        // An unfinished quote in an attribute swallows the rest; an `=` right after a quoted
        // value is a new attribute name, not the start of another quoted value.
        let page = format!("<a b=\"x\"=\" >{}", "<div>".repeat(1000));
        assert_eq!(flatten(&page, MAX_DEPTH).dropped, 801);
        // A comment ended by `--!>` does not hide what follows; neither does `<title>` in SVG.
        let page = format!("<!-- --!>{}-->", "<div>".repeat(1000));
        assert_eq!(flatten(&page, MAX_DEPTH).dropped, 800);
        let page = format!("<svg><title>{}</title></svg>", "<div>".repeat(1000));
        assert!(flatten(&page, MAX_DEPTH).dropped >= 800);
        // An end tag of an ordinary element does not pop past a `<div>` (the parser ignores it).
        let page = "<span><div></span>".repeat(1000);
        assert!(flatten(&page, MAX_DEPTH).dropped >= 1000);
    }

    #[test]
    fn the_dom_is_capped_whatever_the_text_pass_missed() {
        // Fed straight to the parser (as if the text pass had missed it): each repetition
        // nests a paragraph, a table and a cell.
        let page = "<p><table><td></p>x".repeat(400);
        let stop = CancellationToken::new();
        let document = parse(&page, &stop).unwrap();
        assert!(depth_of(&document) > DOM_DEPTH);
        let removed = cap_depth(&document, DOM_DEPTH, &stop).unwrap();
        assert!(removed > 0);
        assert!(depth_of(&document) <= DOM_DEPTH + 1);
        let md = htmd::HtmlToMarkdown::new().tree_to_markdown(&document);
        assert_eq!(md.matches('x').count(), 400, "all the text is kept");
    }

    #[test]
    fn converts_and_reports_flattening() {
        let stop = CancellationToken::new();
        let md = to_markdown("<h1>Title</h1><p>Some <b>bold</b> text</p>", &stop).unwrap();
        assert_eq!(md.text, "# Title\n\nSome **bold** text");
        assert_eq!(md.flattened, 0);
        let md = to_markdown(&nested("div", 2500, "hello"), &stop).unwrap();
        assert_eq!(md.text, "hello");
        assert_eq!(md.flattened, 2300);
    }

    #[test]
    fn a_stopped_conversion_gives_up() {
        let stop = CancellationToken::new();
        stop.cancel();
        let page = "<p>text</p>".repeat(10_000);
        assert_eq!(to_markdown(&page, &stop), Err(Stopped));
    }

    #[test]
    fn strips_tags_for_the_fallback() {
        let text = strip_tags(
            "<html><head><title>T&amp;C</title><style>p{}</style></head><body><p>one <b>two</b></p><div>three &lt;4&gt;</div><script>x<y</script></body>",
        );
        assert_eq!(text, "T&C\none two\nthree <4>\n");
    }
}
