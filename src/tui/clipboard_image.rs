//! An image from the system clipboard, for Ctrl-V: read through the clipboard's own command
//! (`wl-paste` on Wayland, `xclip` on X11), as PNG, the type every program that copies an
//! image offers. Bounded in time (a clipboard owner that never answers) and size; no crate
//! (arboard's image support would bring an image codec for what one command does).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long the clipboard's owner gets to answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The largest image read (a screenshot of a 5K screen is about 15 MB as PNG); the
/// attachment's own limit then refuses what a provider would.
const MAX_BYTES: u64 = 64 << 20;

/// The PNG image the clipboard holds, read with whichever clipboard command this session's
/// display has.
pub fn read_png() -> Result<Vec<u8>, String> {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty());
    let x11 = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty());
    let (list, get): (&[&str], &[&str]) = match (wayland, x11) {
        (true, _) => (
            &["wl-paste", "--list-types"],
            &["wl-paste", "--no-newline", "--type", "image/png"],
        ),
        (false, true) => (
            &["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
            &["xclip", "-selection", "clipboard", "-t", "image/png", "-o"],
        ),
        (false, false) => return Err("no system clipboard here (no Wayland or X11 display)".to_owned()),
    };
    // An empty clipboard has no owner to list types: both commands then fail.
    let types = run(list).map(|(ok, out)| (ok, String::from_utf8_lossy(&out).into_owned()))?;
    if !types.0 || !types.1.lines().any(|t| t.trim() == "image/png") {
        return Err("the clipboard holds no image".to_owned());
    }
    let png = match run(get)? {
        (true, png) => png,
        (false, _) => return Err(format!("{} could not read the clipboard's image", get[0])),
    };
    match png.starts_with(b"\x89PNG\r\n\x1a\n") {
        true => Ok(png),
        false => Err("the clipboard's image is not a PNG".to_owned()),
    }
}

/// How often a clipboard command that closed its output is asked whether it has exited.
const EXIT_POLL: Duration = Duration::from_millis(5);

/// `child`'s exit status, killing it if it has not exited by `deadline` (a command that closed
/// its output may still not exit).
fn exit_by(child: &mut std::process::Child, deadline: std::time::Instant) -> std::io::Result<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            return child.wait();
        }
        std::thread::sleep(EXIT_POLL);
    }
}

/// Runs `argv`, returning whether it succeeded and what it printed; fails on a missing
/// command, more than [`MAX_BYTES`] or no answer within [`TIMEOUT`].
fn run(argv: &[&str]) -> Result<(bool, Vec<u8>), String> {
    let name = argv.first().copied().unwrap_or_default();
    let mut child = Command::new(name)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("reading the clipboard needs `{name}`, which is not installed"),
            _ => format!("could not run {name}: {e}"),
        })?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err(format!("{name} gave no output"));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = (&mut stdout).take(MAX_BYTES + 1).read_to_end(&mut bytes);
        let _ = tx.send(read.map(|_| bytes));
    });
    let deadline = std::time::Instant::now() + TIMEOUT;
    let answer = rx.recv_timeout(TIMEOUT);
    if answer.is_err() {
        let _ = child.kill();
    }
    let status = exit_by(&mut child, deadline).map_err(|e| format!("{name}: {e}"))?;
    let bytes = match answer {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => return Err(format!("reading from {name} failed: {e}")),
        Err(_) => return Err(format!("the clipboard did not answer within {} s", TIMEOUT.as_secs())),
    };
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!("the clipboard's image is over {} MiB", MAX_BYTES >> 20));
    }
    Ok((status.success(), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that closes its output and then does not exit is killed at the deadline
    /// (waited for, it held Ctrl-V's read for as long as it lived, and counted as a success).
    #[test]
    fn a_command_that_closes_its_output_but_lives_on_is_killed() {
        let (ok, out) = run(&["sh", "-c", "echo image/png; exec >&-; exec sleep 60"]).unwrap();
        assert!(!ok);
        assert_eq!(out, b"image/png\n");
    }
}
