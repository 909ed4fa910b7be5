//! Feeds a Server-Sent Events byte stream through a [`StreamDecoder`].
//!
//! SSE framing is parsed by `eventsource-stream`; this module adds the idle timeout and
//! maps transport failures to [`ProviderError`]s.

use std::time::Duration;

use futures_util::{Stream, StreamExt};

use super::{Completion, Delta, ProviderError, StreamDecoder};

/// Reads the whole stream, forwarding deltas, and returns the decoder's assembled answer.
///
/// A stream that ends (or breaks) before the wire format's terminal event is a
/// [`ProviderError::StreamCut`]; nothing half-received is returned.
pub async fn decode_stream<S, B, E>(
    bytes: S,
    mut decoder: Box<dyn StreamDecoder>,
    idle_timeout: Option<Duration>,
    on_delta: &mut (dyn FnMut(Delta) + Send),
) -> Result<Completion, ProviderError>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    use eventsource_stream::Eventsource;
    let mut events = bytes.eventsource();
    loop {
        let next = match idle_timeout {
            Some(limit) => tokio::time::timeout(limit, events.next())
                .await
                .map_err(|_| ProviderError::IdleTimeout(limit.as_secs()))?,
            None => events.next().await,
        };
        let Some(item) = next else { break };
        let event = item.map_err(|e| ProviderError::StreamCut(e.to_string()))?;
        let data = event.data.trim_end();
        if data == "[DONE]" {
            decoder.on_event("done", data, on_delta)?;
            continue;
        }
        decoder.on_event(&event.event, data, on_delta)?;
    }
    decoder.finish()
}
