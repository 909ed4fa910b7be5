//! A real X display for the clipboard tests: `Xvfb` on a free display number (it names it on
//! the descriptor it is given once it accepts clients, so nothing waits by the clock), and
//! `xclip` to own the clipboard as an application that copied an image does.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running Xvfb, killed when dropped (the clipboard owners it served go with it).
pub struct Display {
    server: Child,
    /// `:N`, for `DISPLAY`.
    pub name: String,
}

impl Display {
    /// Starts Xvfb; `None` (a skip, said on stderr) when Xvfb or xclip is missing, which
    /// under `CI` (whose `.ci/run` installs both) is a failure instead.
    pub fn start() -> Option<Self> {
        let missing = ["Xvfb", "xclip"].into_iter().find(|tool| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map_or(true, |o| !o.status.success())
        });
        if let Some(tool) = missing {
            assert!(
                std::env::var_os("CI").is_none(),
                "{tool} is not installed, and CI must run the clipboard tests (apt-get install xvfb xclip)"
            );
            eprintln!("skipping: {tool} is not installed (apt-get install xvfb xclip)");
            return None;
        }
        let mut server = Command::new("Xvfb")
            .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "640x480x24"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let mut line = String::new();
        let stdout = server.stdout.take().expect("Xvfb's stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("Xvfb names its display");
        let number = line.trim();
        assert!(
            !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
            "Xvfb said {line:?}"
        );
        Some(Self {
            server,
            name: format!(":{number}"),
        })
    }

    /// Puts `bytes` on the clipboard as `mime`, owned by an xclip that serves it until the
    /// display ends.
    pub fn copy(&self, mime: &str, bytes: &[u8]) {
        let file = tempfile::NamedTempFile::new().expect("a temporary file");
        std::fs::write(file.path(), bytes).expect("write the clipboard's content");
        let status = Command::new("xclip")
            .args(["-selection", "clipboard", "-t", mime, "-i"])
            .arg(file.path())
            .env("DISPLAY", &self.name)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run xclip");
        assert!(status.success(), "xclip could not take the clipboard");
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
