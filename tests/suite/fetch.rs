//! `fetch` against hostile pages from a local server: deep nesting, compressed bodies, a
//! compression bomb, a download that never ends, and an interrupt in the middle.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brute::tool::Tool;
use brute::tool::fetch::{FetchTool, MAX_BYTES};
use serde_json::json;
use support::{Harness, MockServer, Reply};

fn nested_divs(depth: usize, text: &str) -> String {
    format!(
        "<html><body>{}{text}{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    )
}

fn html(page: String) -> Reply {
    Reply::json(200, page)
        .header("content-type", "text/html")
        .chunked(64 * 1024)
}

/// Fetches `reply` through the real registry; returns (content, is_error).
fn fetch(h: &Harness, reply: Reply) -> (String, bool) {
    let server = MockServer::start();
    server.push(reply);
    let out = h.call("fetch", json!({"url": server.url("/page")}));
    let accepted = server.requests()[0].header("accept-encoding").unwrap_or("").to_owned();
    assert!(accepted.contains("gzip") && accepted.contains("br"), "{accepted}");
    out
}

#[test]
fn a_page_of_2500_nested_divs_is_converted_with_a_note() {
    let h = Harness::new(Vec::new());
    let page = nested_divs(2500, "deep text");
    assert_eq!(page.len(), 27_535, "the 27 KB page that used to overflow the stack");
    let (out, err) = fetch(&h, html(page));
    assert!(!err, "{out}");
    assert!(out.ends_with("\n\ndeep text"), "{out}");
    assert!(
        out.contains("[Note: the page nests elements more than 200 levels deep; 2300 tags beyond that were dropped and their text kept.]"),
        "{out}"
    );
}

#[test]
fn a_page_of_100000_nested_divs_is_converted_within_the_budget() {
    let h = Harness::new(Vec::new());
    let started = Instant::now();
    let (out, err) = fetch(&h, html(nested_divs(100_000, "very deep text")));
    eprintln!("100,000 nested divs: {:?}", started.elapsed());
    assert!(!err, "{out}");
    assert!(out.ends_with("\n\nvery deep text"), "{out}");
    assert!(out.contains("99800 tags beyond that were dropped"), "{out}");
    assert!(
        !out.contains("could not be converted"),
        "converted, not the fallback: {out}"
    );
}

#[test]
fn gzip_and_brotli_bodies_are_decoded() {
    let h = Harness::new(Vec::new());
    let text = "compressed text\n".repeat(1000);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(text.as_bytes()).unwrap();
    let gzip = gzip.finish().unwrap();
    let mut br = Vec::new();
    brotli::CompressorWriter::new(&mut br, 4096, 5, 22)
        .write_all(text.as_bytes())
        .unwrap();
    for (encoding, body) in [("gzip", gzip), ("br", br)] {
        assert!(body.len() < text.len() / 10);
        let reply = Reply::json(200, body)
            .header("content-type", "text/plain")
            .header("content-encoding", encoding);
        let (out, err) = fetch(&h, reply);
        assert!(!err, "{encoding}: {out}");
        assert!(out.ends_with(&format!("\n\n{text}")), "{encoding}: {}", &out[..200]);
    }
}

/// A gzip stream of `segments` MB of the digit `0`: one compressed megabyte repeated (it ends
/// in a sync flush, so the pieces chain), then an empty final block and the trailer.
fn gzip_bomb(segments: u32) -> Vec<u8> {
    let megabyte = vec![b'0'; 1 << 20];
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflate.write_all(&megabyte).unwrap();
    deflate.flush().unwrap();
    let segment = deflate.get_ref().clone();
    let mut crc = flate2::Crc::new();
    let mut one = flate2::Crc::new();
    one.update(&megabyte);
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    for _ in 0..segments {
        out.extend_from_slice(&segment);
        crc.combine(&one);
    }
    out.extend_from_slice(&[0x03, 0x00]);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(u64::from(segments) << 20).to_le_bytes()[..4]);
    out
}

#[test]
fn a_gzip_bomb_stops_at_the_cap() {
    let bomb = gzip_bomb(1024);
    assert!(bomb.len() < 1_200_000, "1 GB in {} bytes", bomb.len());
    let small = gzip_bomb(2);
    let mut decoded = String::new();
    flate2::read::GzDecoder::new(&small[..])
        .read_to_string(&mut decoded)
        .unwrap();
    assert_eq!(decoded.len(), 2 << 20, "the bomb is a valid gzip stream");
    let h = Harness::new(Vec::new());
    let reply = Reply::json(200, bomb)
        .header("content-type", "text/plain")
        .header("content-encoding", "gzip")
        .chunked(64 * 1024);
    let (out, err) = fetch(&h, reply);
    assert!(!err, "{}", &out[..300]);
    assert!(
        out.contains(&format!("[body cut at {MAX_BYTES} bytes]\n")),
        "{}",
        &out[..300]
    );
    assert!(out.contains("\n\n0000000000"), "{}", &out[..300]);
}

#[test]
fn a_download_that_never_ends_times_out_within_the_budget() {
    let h = Harness::new(vec![Arc::new(FetchTool::with_budget(Duration::from_millis(300)))]);
    let server = MockServer::start();
    server.push(
        Reply::json(200, "x".repeat(1000))
            .header("content-type", "text/plain")
            .cut_at(100)
            .stall(),
    );
    let (out, err) = h.call("fetch", json!({"url": server.url("/slow")}));
    assert!(err, "{out}");
    assert!(
        out.starts_with("Error: Timeout: the download did not finish within the 300ms budget (100 bytes received)"),
        "{out}"
    );
}

/// A server that answers with headers and part of a body, reports that on `sent`, and then
/// keeps the connection open and silent until the client hangs up.
fn stalling_server(sent: tokio::sync::oneshot::Sender<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/stall", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        let mut writer = stream;
        writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 1000000\r\n\r\n<p>start")
            .unwrap();
        writer.flush().unwrap();
        let _ = sent.send(());
        let mut sink = [0u8; 64];
        while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    });
    url
}

#[test]
fn an_interrupted_download_stops_at_once() {
    // The tool is called directly: the executor would abandon a tool that ignores the
    // interrupt, and this checks that the tool itself stops.
    let h = Harness::new(Vec::new());
    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
    let url = stalling_server(sent_tx);
    let (sink, _events) = brute::protocol::EventSink::channel();
    let ctx = brute::tool::ToolContext::standalone(h.executor.agent().clone(), sink);
    let tool = FetchTool::default();
    let result = h.runtime.block_on(async {
        let call = tool.call(json!({"url": url}), &ctx);
        let interrupt = async {
            sent_rx.await.unwrap();
            ctx.cancel.cancel();
        };
        let both = async { tokio::join!(call, interrupt).0 };
        tokio::time::timeout(Duration::from_secs(10), both)
            .await
            .expect("the fetch stops when interrupted")
    });
    let error = result.unwrap_err();
    assert_eq!(
        (error.kind.as_str(), error.message.as_str()),
        ("Interrupted", "the fetch was interrupted")
    );
}
