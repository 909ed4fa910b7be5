//! brute's own timestamps of a run, for the benchmarks (`BRUTE_TIMINGS=1` prints them on
//! stderr at exit): when the UI drew its first frame, when the first model request left, when
//! the last byte of the last answer arrived, when the first user turn ended (its checkpoint
//! recorded), and when brute exited, each in ms since the process started. Off, a mark costs one
//! atomic load.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Set to print the timings at exit.
pub const VAR: &str = "BRUTE_TIMINGS";

const UNSET: u64 = u64::MAX;
static STARTED: OnceLock<Instant> = OnceLock::new();
static FIRST_REQUEST: AtomicU64 = AtomicU64::new(UNSET);
static LAST_BYTE: AtomicU64 = AtomicU64::new(UNSET);
static FIRST_FRAME: AtomicU64 = AtomicU64::new(UNSET);
static FIRST_TURN: AtomicU64 = AtomicU64::new(UNSET);

/// Starts the clock (first thing in `main`) when timings are asked for.
pub fn start() {
    if std::env::var_os(VAR).is_some() {
        let _ = STARTED.set(Instant::now());
    }
}

fn now_us() -> Option<u64> {
    Some(STARTED.get()?.elapsed().as_micros() as u64)
}

/// A model request is about to be sent (only the first counts).
pub fn request_sent() {
    if let Some(at) = now_us() {
        let _ = FIRST_REQUEST.compare_exchange(UNSET, at, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The UI drew a frame (only the first counts).
pub fn frame_drawn() {
    if let Some(at) = now_us() {
        let _ = FIRST_FRAME.compare_exchange(UNSET, at, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A user turn ended, its checkpoint recorded (only the first counts).
pub fn turn_finished() {
    if let Some(at) = now_us() {
        let _ = FIRST_TURN.compare_exchange(UNSET, at, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The last byte of a model's answer arrived (the last one counts).
pub fn answer_ended() {
    if let Some(at) = now_us() {
        LAST_BYTE.store(at, Ordering::Relaxed);
    }
}

/// The line to print at exit, when timings were asked for.
pub fn report() -> Option<String> {
    let exit = now_us()?;
    let ms = |us: u64| {
        if us == UNSET {
            "-".to_owned()
        } else {
            format!("{:.2}", us as f64 / 1000.0)
        }
    };
    let last = LAST_BYTE.load(Ordering::Relaxed);
    let after = if last == UNSET {
        "-".to_owned()
    } else {
        ms(exit.saturating_sub(last))
    };
    Some(format!(
        "brute timings: first_frame_ms={} first_request_ms={} last_byte_ms={} first_turn_ms={} exit_ms={} exit_after_last_byte_ms={after}",
        ms(FIRST_FRAME.load(Ordering::Relaxed)),
        ms(FIRST_REQUEST.load(Ordering::Relaxed)),
        ms(last),
        ms(FIRST_TURN.load(Ordering::Relaxed)),
        ms(exit)
    ))
}
