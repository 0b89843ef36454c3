//! A spinner for long operations, drawn on stderr only when stderr is a terminal, so pipes, logs
//! and `--json` consumers never see it. It runs on its own thread because the work it accompanies
//! is one blocking call.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

#[derive(Debug)]
pub struct Spinner {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    pub fn start(message: &str) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let done = Arc::clone(&done);
            let message = message.to_owned();
            std::thread::spawn(move || {
                // Short operations finish before the first frame and never flicker.
                std::thread::sleep(Duration::from_millis(150));
                let mut frame = 0;
                while !done.load(Ordering::Relaxed) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{} {message}", FRAMES[frame % FRAMES.len()]);
                    let _ = err.flush();
                    drop(err);
                    frame += 1;
                    std::thread::sleep(Duration::from_millis(80));
                }
                if frame > 0 {
                    let mut err = std::io::stderr().lock();
                    // Erase the line so the report starts clean.
                    let _ = write!(err, "\r\x1b[2K");
                    let _ = err.flush();
                }
            })
        });
        Self { done, thread }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A progress bar for work with a known size, drawn on stderr only when stderr is a terminal and
/// the work is large enough to be worth watching.
#[derive(Debug)]
pub struct Bar {
    message: String,
    drawn: Option<usize>,
    enabled: bool,
}

impl Bar {
    /// Work smaller than this finishes before a bar would be read.
    const MIN_TOTAL: usize = 200;
    const WIDTH: usize = 30;

    pub fn new(message: &str) -> Self {
        Self {
            message: message.to_owned(),
            drawn: None,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    pub fn update(&mut self, done: usize, total: usize) {
        if !self.enabled || total < Self::MIN_TOTAL {
            return;
        }
        let filled = done.min(total) * Self::WIDTH / total;
        // Redraw only when the bar grows: thousands of writes would slow the work it shows.
        if self.drawn == Some(filled) {
            return;
        }
        self.drawn = Some(filled);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{} [{}{}] {done}/{total}",
            self.message,
            "#".repeat(filled),
            " ".repeat(Self::WIDTH - filled)
        );
        let _ = err.flush();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if self.drawn.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
