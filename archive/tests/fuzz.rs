//! The reader fuzzed: every archive of the corpus (`tests/corpus/`: what real tools write, as
//! WARC, gzipped per record or whole, ARC and WACZ) mutated thousands of ways (bytes flipped,
//! inserted, removed, ranges repeated or cut, lengths and chunk sizes made absurd, gzip
//! re-packed around mutated records), then opened and every entry loaded. Whatever the input,
//! the reader answers (an archive or a refusal) without panicking, within its bounds. The
//! mutations are drawn from a fixed seed, so a failure is found again by its case number; a
//! case that once broke it goes into the corpus.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use browserenv_archive::{open, open_bytes, Budget, Catalog, ReadLimits};

/// Mutated cases per corpus file.
const CASES: u64 = 2000;

/// A small, fixed generator (xorshift64*): the same cases on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn limits() -> ReadLimits {
    ReadLimits {
        body_bytes: 1 << 20,
        archive_bytes: 8 << 20,
    }
}

/// Numbers that have broken readers: lengths and chunk sizes at the edges.
const ABSURD: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-1",
    "0",
    "ffffffffffffffff",
    "fffffffffffffffe",
    "-5",
    "99999999999999999999999",
    "4294967296",
];

fn mutate(bytes: &[u8], draw: &mut Draw) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..1 + draw.below(4) {
        let len = out.len();
        match draw.below(8) {
            0 if len > 0 => {
                let at = draw.below(len);
                out[at] ^= 1 << draw.below(8);
            }
            1 => {
                let at = draw.below(len + 1);
                let byte = [b'\r', b'\n', b':', b' ', b'0', 0xff, 0][draw.below(7)];
                out.insert(at, byte);
            }
            2 if len > 0 => {
                let at = draw.below(len);
                let end = (at + 1 + draw.below(64)).min(len);
                out.drain(at..end);
            }
            3 if len > 0 => {
                let at = draw.below(len);
                let end = (at + 1 + draw.below(256)).min(len);
                let copy = out[at..end].to_vec();
                let to = draw.below(len);
                out.splice(to..to, copy);
            }
            4 if len > 0 => out.truncate(draw.below(len)),
            5 => {
                // A number in a head (a Content-Length, a chunk size) made absurd.
                let digits: Vec<usize> = (0..len).filter(|&i| out[i].is_ascii_hexdigit()).collect();
                if !digits.is_empty() {
                    let at = digits[draw.below(digits.len())];
                    let end = (at..len)
                        .find(|&i| !out[i].is_ascii_hexdigit())
                        .unwrap_or(len);
                    let absurd = ABSURD[draw.below(ABSURD.len())].as_bytes().to_vec();
                    out.splice(at..end, absurd);
                }
            }
            6 => {
                let at = draw.below(len + 1);
                out.splice(at..at, b"Transfer-Encoding: chunked\r\n".to_vec());
            }
            _ => {
                let at = draw.below(len + 1);
                out.splice(at..at, b"Content-Encoding: br\r\n".to_vec());
            }
        }
    }
    out
}

fn gunzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// Every entry loaded, each within the budget; errors are answers too.
fn load_all(catalog: &Catalog) {
    let budget = Budget::new(limits().archive_bytes);
    for index in 0..catalog.entries.len() {
        let _ = catalog.load(index, &budget);
        let _ = catalog.load_request(index, &budget);
    }
}

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "the corpus is in {}", dir.display());
    files
}

#[test]
fn mutated_archives_are_read_or_refused_never_a_panic() {
    let scratch = std::env::temp_dir().join(format!("browserenv-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut opened = 0;
    for file in corpus() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let seed = std::fs::read(&file).unwrap();
        // Each seed reads as it is.
        let whole = if name.ends_with(".wacz") {
            open(&file, &name, &limits())
        } else {
            open_bytes(&seed, &name, &limits())
        };
        let catalog = whole.unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(!catalog.entries.is_empty(), "{name}");
        load_all(&catalog);
        let unpacked = gunzip(&seed).filter(|_| seed.starts_with(&[0x1f, 0x8b]));
        for case in 0..CASES {
            let mut draw = Draw(0x9e37_79b9_7f4a_7c15 ^ (case + 1).wrapping_mul(0x1000_0001));
            // Half the cases mutate what is inside the gzip, packed again.
            let mutated = match &unpacked {
                Some(inner) if case % 2 == 0 => gzip(&mutate(inner, &mut draw)),
                _ => mutate(&seed, &mut draw),
            };
            let result = std::panic::catch_unwind(|| {
                let found = if name.ends_with(".wacz") {
                    let path = scratch.join(format!("case-{case}.wacz"));
                    std::fs::write(&path, &mutated).unwrap();
                    let found = open(&path, "case.wacz", &limits());
                    let _ = std::fs::remove_file(&path);
                    found
                } else {
                    open_bytes(&mutated, &name, &limits())
                };
                if let Ok(catalog) = found {
                    load_all(&catalog);
                    return true;
                }
                false
            });
            match result {
                Ok(true) => opened += 1,
                Ok(false) => {}
                Err(_) => {
                    let kept = scratch.join(format!("panic-{name}-{case}"));
                    std::fs::write(&kept, &mutated).unwrap();
                    panic!(
                        "{name}, case {case}: the reader panicked (input kept in {})",
                        kept.display()
                    );
                }
            }
        }
    }
    // The mutations reach past the first refusal: many cases still open.
    assert!(opened > 100, "only {opened} mutated archives opened");
    let _ = std::fs::remove_dir_all(&scratch);
}
