//! The decoded-bytes budget of an archive (`BROWSER_ARCHIVE_EPISODE_MB`): everything unpacked or
//! decoded while reading one counts against a single sum (the WARC stream gunzipped, each record's
//! chunked, gzip, deflate or brotli body, requests and responses alike), so a small crafted file
//! cannot make the server decode gigabytes one bounded piece at a time.

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One budget, shared by every reader of the archive it belongs to.
#[derive(Debug, Clone)]
pub struct Budget {
    left: Arc<AtomicU64>,
    limit: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget {
            left: Arc::new(AtomicU64::new(limit)),
            limit,
        }
    }

    /// Take `bytes` from what is left, or fail (taking nothing) when that is less.
    pub fn charge(&self, bytes: u64) -> io::Result<()> {
        let taken = self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(bytes)
            });
        match taken {
            Ok(_) => Ok(()),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "the archive holds more than {} once unpacked and decoded (BROWSER_ARCHIVE_EPISODE_MB)",
                    size(self.limit)
                ),
            )),
        }
    }

    /// Bytes decoded so far.
    pub fn spent(&self) -> u64 {
        self.limit - self.left.load(Ordering::SeqCst)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }
}

/// A reader whose every byte read is charged to a budget.
pub(crate) struct Charged<R> {
    inner: R,
    budget: Budget,
}

impl<R> Charged<R> {
    pub(crate) fn new(inner: R, budget: &Budget) -> Self {
        Charged {
            inner,
            budget: budget.clone(),
        }
    }
}

impl<R: Read> Read for Charged<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.budget.charge(read as u64)?;
        Ok(read)
    }
}

/// A buffered reader that counts the bytes consumed from it: where the next byte sits.
pub(crate) struct Counting<R> {
    inner: R,
    pub(crate) consumed: u64,
}

impl<R> Counting<R> {
    pub(crate) fn new(inner: R) -> Self {
        Counting { inner, consumed: 0 }
    }
}

impl<R: BufRead> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.inner.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
        self.consumed += amount as u64;
    }
}

/// A size as people read it.
pub(crate) fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_shared_and_refuses_what_is_past_it() {
        let budget = Budget::new(10);
        let other = budget.clone();
        budget.charge(6).unwrap();
        assert!(
            other.charge(5).is_err(),
            "shared, and nothing taken on a refusal"
        );
        other.charge(4).unwrap();
        assert_eq!(budget.spent(), 10);
        let mut reader = Charged::new(&b"abc"[..], &Budget::new(2));
        let mut out = Vec::new();
        let err = reader.read_to_end(&mut out).unwrap_err();
        assert!(
            err.to_string().contains("BROWSER_ARCHIVE_EPISODE_MB"),
            "{err}"
        );
    }
}
