//! Reading the payload from stdin without ever hanging, ballooning or breaking the writer's pipe.
//!
//! Claude Code writes the payload and closes stdin. A reader thread feeds chunks to the main
//! thread, which reads to end of input — never stopping early, because a writer still writing
//! into a pipe nobody reads gets SIGPIPE/EPIPE. Past the size cap the rest is drained and
//! discarded; at the deadline the hook stops waiting. Either way it then decides from what it
//! kept: the first JSON value in it, when that value is complete (trailing bytes are ignored).
//! When the main thread gives up at the deadline, the reader thread is left blocked and dies with
//! the process.

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
    // Bytes seen in all, kept or drained.
    let mut total = 0usize;
    let ended_in_time = loop {
        let left = give_up_at.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(Chunk::Data(bytes))) => {
                total += bytes.len();
                let room = cap.saturating_sub(payload.len());
                payload.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Ok(Ok(Chunk::End)) | Err(mpsc::RecvTimeoutError::Disconnected) => break true,
            Ok(Err(e)) => return Err(MalformedInput::NotJson(format!("reading stdin: {e}"))),
            Err(mpsc::RecvTimeoutError::Timeout) => break false,
        }
    };
    let complete = first_value_complete(&payload);
    if total > cap && !complete {
        Err(MalformedInput::TooLarge(total))
    } else if !ended_in_time && !complete {
        Err(MalformedInput::Timeout(total))
    } else {
        Ok(payload)
    }
}

/// Does `payload` start with a complete JSON value (whatever follows it)?
fn first_value_complete(payload: &[u8]) -> bool {
    serde_json::Deserializer::from_slice(payload)
        .into_iter::<serde::de::IgnoredAny>()
        .next()
        .is_some_and(|v| v.is_ok())
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
    fn a_complete_payload_on_an_open_pipe_is_served_at_the_deadline() {
        let data = br#"{"hook_event_name":"Stop"}"#.to_vec();
        let got = read_payload(
            NeverCloses(Cursor::new(data.clone())),
            INPUT_CAP,
            Duration::from_millis(100),
        );
        assert_eq!(got, Ok(data));
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

    /// Counts what the hook consumed, so a test can see the input was read to its end.
    struct Counted(
        Cursor<Vec<u8>>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    );
    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            Ok(n)
        }
    }

    #[test]
    fn input_past_the_cap_is_drained_and_decided_from_what_was_kept() {
        let mut data = br#"{"hook_event_name":"Stop"}"#.to_vec();
        data.extend(vec![b' '; 300_000]);
        let consumed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let got = read_payload(
            Counted(Cursor::new(data.clone()), consumed.clone()),
            100_000,
            READ_DEADLINE,
        );
        assert_eq!(got, Ok(data[..100_000].to_vec()));
        assert_eq!(
            consumed.load(std::sync::atomic::Ordering::SeqCst),
            data.len(),
            "read to the end"
        );
    }

    #[test]
    fn trailing_bytes_after_the_payload_are_read_and_ignored() {
        let data = br#"{"hook_event_name":"Stop"} and more"#.to_vec();
        assert_eq!(
            read_payload(Cursor::new(data.clone()), INPUT_CAP, READ_DEADLINE),
            Ok(data)
        );
    }

    #[test]
    fn oversized_input_is_refused() {
        let got = read_payload(Cursor::new(vec![b' '; 300_000]), 100_000, READ_DEADLINE);
        assert_eq!(got, Err(MalformedInput::TooLarge(300_000)));
    }
}
