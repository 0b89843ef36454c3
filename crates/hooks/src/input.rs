//! Reading the payload from stdin without ever hanging or ballooning.
//!
//! Claude Code writes the payload and closes stdin, but a hook must survive a writer that does
//! not: a reader thread feeds chunks to the main thread, which stops at end of input, at the size
//! cap, or at the deadline. As soon as the bytes read so far form a complete JSON value it stops
//! waiting too, so a payload sent without closing the pipe is still served promptly. When the
//! main thread gives up, the reader thread is left blocked and dies with the process.

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::protocol::MalformedInput;

/// Payloads larger than this are refused (tool responses can be big; 4 MiB is far past any
/// realistic one, and keeps memory bounded).
pub const INPUT_CAP: usize = 4 * 1024 * 1024;

/// How long stdin may stay open without a complete payload.
pub const READ_DEADLINE: Duration = Duration::from_secs(2);

const CHUNK: usize = 64 * 1024;

enum Chunk {
    Data(Vec<u8>),
    End,
}

/// Reads one payload. Errors only with [`MalformedInput::TooLarge`], [`MalformedInput::Timeout`]
/// or [`MalformedInput::NotJson`] (an I/O error reading stdin); an empty input is returned as is.
pub fn read_payload<R: Read + Send + 'static>(
    reader: R,
    cap: usize,
    deadline: Duration,
) -> Result<Vec<u8>, MalformedInput> {
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Chunk>>(4);
    std::thread::spawn(move || {
        let mut reader = reader;
        loop {
            let mut buf = vec![0u8; CHUNK];
            let sent = match reader.read(&mut buf) {
                Ok(0) => tx.send(Ok(Chunk::End)).map(|_| false),
                Ok(n) => {
                    buf.truncate(n);
                    tx.send(Ok(Chunk::Data(buf))).map(|_| true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(true),
                Err(e) => tx.send(Err(e)).map(|_| false),
            };
            if !matches!(sent, Ok(true)) {
                return;
            }
        }
    });
    let give_up_at = Instant::now() + deadline;
    let mut payload = Vec::new();
    loop {
        let left = give_up_at.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(Chunk::Data(bytes))) => {
                payload.extend_from_slice(&bytes);
                if payload.len() > cap {
                    return Err(MalformedInput::TooLarge(payload.len()));
                }
                if looks_complete(&payload) {
                    return Ok(payload);
                }
            }
            Ok(Ok(Chunk::End)) => return Ok(payload),
            Ok(Err(e)) => return Err(MalformedInput::NotJson(format!("reading stdin: {e}"))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(MalformedInput::Timeout(payload.len()));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(payload),
        }
    }
}

/// A complete JSON object so far? Only tried when the data ends in `}`, so a large payload
/// arriving in many chunks is not re-parsed after each one.
fn looks_complete(payload: &[u8]) -> bool {
    let last = payload.iter().rev().find(|b| !b.is_ascii_whitespace());
    last == Some(&b'}') && serde_json::from_slice::<serde::de::IgnoredAny>(payload).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A reader that yields its data and then blocks forever, like a pipe nobody closes.
    struct NeverCloses(Cursor<Vec<u8>>);
    impl Read for NeverCloses {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => loop {
                    std::thread::park();
                },
                n => Ok(n),
            }
        }
    }

    #[test]
    fn reads_to_the_end() {
        let data = br#"{"hook_event_name":"Stop"}"#.to_vec();
        assert_eq!(
            read_payload(Cursor::new(data.clone()), INPUT_CAP, READ_DEADLINE),
            Ok(data)
        );
        assert_eq!(
            read_payload(Cursor::new(Vec::new()), INPUT_CAP, READ_DEADLINE),
            Ok(Vec::new())
        );
    }

    #[test]
    fn a_complete_payload_on_an_open_pipe_is_served_at_once() {
        let data = br#"{"hook_event_name":"Stop"}"#.to_vec();
        let started = Instant::now();
        let got = read_payload(
            NeverCloses(Cursor::new(data.clone())),
            INPUT_CAP,
            Duration::from_secs(30),
        );
        assert_eq!(got, Ok(data));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn an_incomplete_payload_on_an_open_pipe_times_out() {
        let got = read_payload(
            NeverCloses(Cursor::new(br#"{"hook_event_name":"#.to_vec())),
            INPUT_CAP,
            Duration::from_millis(100),
        );
        assert_eq!(got, Err(MalformedInput::Timeout(19)));
    }

    #[test]
    fn oversized_input_is_refused() {
        let got = read_payload(Cursor::new(vec![b' '; 300_000]), 100_000, READ_DEADLINE);
        assert!(matches!(got, Err(MalformedInput::TooLarge(n)) if n > 100_000));
    }
}
