//! The terminal's output, written by a thread of its own. A terminal that stops reading (a stalled
//! SSH connection, a suspended terminal) then never blocks the event loop, which goes on answering
//! signals, the server and the person's quit; frames are not drawn while the one before is still
//! on its way, so nothing piles up.
//!
//! Lines printed outside the UI (the subcommands' reports, warnings and errors) go through
//! `printable`: they quote recordings, servers and pages, none of which may write to the terminal.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// One writer for everything the UI sends to the terminal; clones share it, so the cells ratatui
/// draws and the pictures written after them keep their order.
#[derive(Clone)]
pub struct Output {
    shared: Arc<Shared>,
}

struct Shared {
    /// What was written since the last flush.
    buffer: Mutex<Vec<u8>>,
    chunks: Mutex<Option<mpsc::Sender<Chunk>>>,
    /// Chunks handed to the writer and not yet written.
    pending: AtomicUsize,
}

enum Chunk {
    Bytes(Vec<u8>),
    /// The last chunk: written, then the writer says so and ends.
    Last(Vec<u8>, mpsc::Sender<()>),
}

impl Output {
    /// An output to stdout through a writer thread.
    pub fn to_stdout() -> Output {
        Output::new(std::io::stdout())
    }

    /// An output to `sink` through a writer thread.
    pub fn new<W: Write + Send + 'static>(mut sink: W) -> Output {
        let (chunks, received) = mpsc::channel::<Chunk>();
        let shared = Arc::new(Shared {
            buffer: Mutex::new(Vec::new()),
            chunks: Mutex::new(Some(chunks)),
            pending: AtomicUsize::new(0),
        });
        let counter = shared.clone();
        let _ = std::thread::Builder::new()
            .name("terminal-output".into())
            .spawn(move || {
                for chunk in received {
                    match chunk {
                        Chunk::Bytes(bytes) => {
                            // A terminal that went away takes nothing: the UI notices elsewhere.
                            let _ = sink.write_all(&bytes).and_then(|()| sink.flush());
                            counter.pending.fetch_sub(1, Ordering::SeqCst);
                        }
                        Chunk::Last(bytes, done) => {
                            let _ = sink.write_all(&bytes).and_then(|()| sink.flush());
                            let _ = done.send(());
                            return;
                        }
                    }
                }
            });
        Output { shared }
    }

    /// Frames handed over and not yet written to the terminal.
    pub fn backlog(&self) -> usize {
        self.shared.pending.load(Ordering::SeqCst)
    }

    /// Write `bytes` after everything before them and stop; wait at most `timeout` for them to
    /// reach the terminal. Frames still queued are written first (they end before `bytes`).
    /// Returns whether they were written in time.
    pub fn finish(&self, bytes: &[u8], timeout: Duration) -> bool {
        let _ = self.flush_buffer();
        let Some(chunks) = self.shared.chunks.lock().ok().and_then(|mut c| c.take()) else {
            return false;
        };
        let (done, written) = mpsc::channel();
        if chunks.send(Chunk::Last(bytes.to_vec(), done)).is_err() {
            return false;
        }
        written.recv_timeout(timeout).is_ok()
    }

    fn flush_buffer(&self) -> std::io::Result<()> {
        let bytes = match self.shared.buffer.lock() {
            Ok(mut buffer) => std::mem::take(&mut *buffer),
            Err(_) => return Ok(()),
        };
        if bytes.is_empty() {
            return Ok(());
        }
        let chunks = self.shared.chunks.lock().ok();
        if let Some(chunks) = chunks.as_ref().and_then(|c| c.as_ref()) {
            self.shared.pending.fetch_add(1, Ordering::SeqCst);
            if chunks.send(Chunk::Bytes(bytes)).is_err() {
                self.shared.pending.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut buffer) = self.shared.buffer.lock() {
            buffer.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flush_buffer()
    }
}

/// `text` for one printed line, with every control character but the tab (C0, DEL, C1) shown as
/// `\u00XX`. Text that came from a recording, a server or a page can carry escape sequences a
/// terminal acts on (`ESC ]52;c;…` writes the clipboard, `ESC [2J` clears the screen, U+009B is a
/// CSI by itself); a newline could forge a line of the report. The JSON form of the escape keeps a
/// printed JSON line valid and meaning the same.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\t';
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_carries_no_control_character() {
        let hostile = "id\x1b]52;c;aGk=\x07 \x1b[2J\u{9b}31m\r\nfake line\x7f\ttab é";
        let shown = printable(hostile);
        assert_eq!(
            shown,
            "id\\u001b]52;c;aGk=\\u0007 \\u001b[2J\\u009b31m\\u000d\\u000afake line\\u007f\ttab é"
        );
        assert!(!shown.contains(|c: char| c.is_control() && c != '\t'));
        assert!(matches!(
            printable("plain text"),
            Cow::Borrowed("plain text")
        ));
        // A JSON line stays JSON, with the same meaning.
        let line = serde_json::json!({"url": "https://a.example/\u{9b}"}).to_string();
        let value: serde_json::Value = serde_json::from_str(&printable(&line)).unwrap();
        assert_eq!(value["url"], "https://a.example/\u{9b}");
    }

    /// A terminal: what it received, and a gate that holds every write while closed.
    #[derive(Clone, Default)]
    struct Terminal {
        received: Arc<Mutex<Vec<u8>>>,
        gate: Arc<Mutex<()>>,
    }

    impl Write for Terminal {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let _open = self.gate.lock().unwrap();
            self.received.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_arrive_whole_and_in_order_and_finish_comes_last() {
        let terminal = Terminal::default();
        let mut output = Output::new(terminal.clone());
        let mut pictures = output.clone();
        output.write_all(b"cells ").unwrap();
        pictures.write_all(b"picture ").unwrap();
        output.flush().unwrap();
        output.write_all(b"second ").unwrap();
        output.flush().unwrap();
        assert!(output.finish(b"restored", Duration::from_secs(5)));
        assert_eq!(
            &*terminal.received.lock().unwrap(),
            b"cells picture second restored"
        );
        assert_eq!(output.backlog(), 0);
        // After finishing, nothing more is sent.
        output.write_all(b"late").unwrap();
        output.flush().unwrap();
        assert!(!terminal.received.lock().unwrap().ends_with(b"late"));
    }

    #[test]
    fn a_terminal_that_stops_reading_blocks_only_the_writer() {
        let terminal = Terminal::default();
        let held = terminal.gate.lock().unwrap();
        let mut output = Output::new(terminal.clone());
        for _ in 0..3 {
            output.write_all(&[b'x'; 100_000]).unwrap();
            output.flush().unwrap();
        }
        // Handed over at once; the UI sees the backlog and waits before drawing more.
        assert!(output.backlog() >= 2);
        assert!(
            !output.finish(b"restored", Duration::from_millis(50)),
            "still blocked"
        );
        drop(held);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while output.backlog() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(output.backlog(), 0);
    }
}
