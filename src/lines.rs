//! Lines from a program on stdin (Claude Code's stream-json, ACP's JSON-RPC): read one at a
//! time in the background, each bounded, so a line without end is refused instead of
//! buffered until memory runs out.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;

/// The longest line read (a bigger one is skipped, with an error in its place).
pub const MAX_LINE: usize = 64 << 20;

/// Reads `input` line by line into the returned channel, which closes at its end. Blank lines
/// are skipped; a line past [`MAX_LINE`] arrives as an error and the rest of it goes unread.
pub fn read(input: impl AsyncRead + Unpin + Send + 'static) -> mpsc::UnboundedReceiver<Result<String, String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        let limit = MAX_LINE as u64 + 1;
        loop {
            line.clear();
            match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    let _ = tx.send(Err(error.to_string()));
                    break;
                }
            }
            if line.len() > MAX_LINE {
                let _ = tx.send(Err(format!("a line longer than {} MiB was skipped", MAX_LINE >> 20)));
                while !line.ends_with(b"\n") {
                    line.clear();
                    match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if !text.is_empty() && tx.send(Ok(text.to_owned())).is_err() {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_come_trimmed_and_blank_ones_not_at_all() {
        let mut rx = read(&b"{\"a\":1}\n\n  \r\n{\"b\":2}"[..]);
        assert_eq!(rx.recv().await, Some(Ok("{\"a\":1}".to_owned())));
        assert_eq!(rx.recv().await, Some(Ok("{\"b\":2}".to_owned())));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_line_past_the_cap_is_skipped_and_the_next_one_comes() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"after\":1}\n");
        let mut rx = read(std::io::Cursor::new(input));
        assert!(matches!(rx.recv().await, Some(Err(e)) if e.contains("skipped")));
        assert_eq!(rx.recv().await, Some(Ok("{\"after\":1}".to_owned())));
        assert_eq!(rx.recv().await, None);
    }
}
