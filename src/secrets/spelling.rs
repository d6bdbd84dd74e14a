//! Where a secret stands in a text, however the text spells it: as it is; percent- or
//! form-encoded (`%22`, `+`); escaped in a JSON string (`\"`, `\u00e9`); as HTML entities
//! (`&quot;`, `&#34;`); one of those inside another (a form-encoded value in a JSON body); or in
//! base64 (`Authorization: Basic dXNlcjpodW50ZXIy`). The text is read in each spelling with a map
//! back to its own bytes, so what is hidden is the secret's span of the text as it was written,
//! the rest of it left as it is (a page's HTML or script stays what it was).
//!
//! Where a secret must stand whole: a secret of `ANYWHERE` characters or more is found anywhere;
//! a shorter one, and a start of a secret (what a field held on its way to it, `ANYWHERE`
//! characters at least), only where it is a whole value: the whole text, or between delimiters
//! such as `=` and `&`, quotes, or `>` and `<`. So `v=Kx%229q` (a page's per-keystroke request)
//! hides the start `Kx"9q` of `Kx"9q#2w`, but the word `Summer` in `Summer sale` is not hidden
//! for being the start of `Summer2024!`.

/// Secrets this long or longer are found anywhere in a text; shorter ones, and starts, only as
/// whole values (`whole_value`).
pub const ANYWHERE: usize = 4;

/// Shortest base64 run looked into: `Basic ` credentials are longer.
const BASE64_RUN: usize = 8;

/// A text read in one spelling: what it says, and for each byte of that where the bytes of the
/// source it came from start.
pub struct Reading {
    pub text: String,
    starts: Vec<u32>,
    source_len: usize,
}

impl Reading {
    /// The source's byte span of `from..to` (byte offsets into `text`, on char boundaries).
    fn source_span(&self, from: usize, to: usize) -> (usize, usize) {
        let start = self.starts[from] as usize;
        let end = match self.starts.get(to) {
            Some(next) => *next as usize,
            None => self.source_len,
        };
        (start, end)
    }

    fn push(&mut self, c: char, at: usize) {
        self.text.push(c);
        for _ in 0..c.len_utf8() {
            self.starts.push(at as u32);
        }
    }

    /// This reading read again (`inner`, made of `self.text`), mapped back to the first source.
    pub fn through(&self, inner: Reading) -> Reading {
        Reading {
            starts: inner
                .starts
                .iter()
                .map(|at| self.starts[*at as usize])
                .collect(),
            text: inner.text,
            source_len: self.source_len,
        }
    }
}

/// Whether a text may spell something otherwise than as it is.
pub fn has_escapes(text: &str) -> bool {
    text.contains(['%', '+', '\\', '&'])
}

/// `source` with its escapes read: percent-encoding (and `+` as a space when `plus_is_space`),
/// JSON string escapes, HTML character references. None for a text too long to map.
pub fn decode(source: &str, plus_is_space: bool) -> Option<Reading> {
    if source.len() >= u32::MAX as usize {
        return None;
    }
    let mut out = Reading {
        text: String::with_capacity(source.len()),
        starts: Vec::with_capacity(source.len()),
        source_len: source.len(),
    };
    let bytes = source.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let next = match bytes[at] {
            b'%' => percent(bytes, at, &mut out),
            b'+' if plus_is_space => {
                out.push(' ', at);
                Some(at + 1)
            }
            b'\\' => json_escape(bytes, at, &mut out),
            b'&' => html_reference(source, at, &mut out),
            _ => None,
        };
        at = match next {
            Some(next) => next,
            None => {
                let c = source[at..].chars().next().expect("at a char boundary");
                out.push(c, at);
                at + c.len_utf8()
            }
        };
    }
    Some(out)
}

fn hex_value(byte: u8) -> Option<u32> {
    (byte as char).to_digit(16)
}

/// A run of `%XX` read as UTF-8 (what cannot be read, as U+FFFD); None when `at` starts none.
fn percent(bytes: &[u8], at: usize, out: &mut Reading) -> Option<usize> {
    let mut raw = Vec::new();
    let mut offsets = Vec::new();
    let mut end = at;
    while bytes.get(end) == Some(&b'%') {
        let (Some(high), Some(low)) = (
            bytes.get(end + 1).copied().and_then(hex_value),
            bytes.get(end + 2).copied().and_then(hex_value),
        ) else {
            break;
        };
        raw.push((high * 16 + low) as u8);
        offsets.push(end);
        end += 3;
    }
    if raw.is_empty() {
        return None;
    }
    let mut k = 0;
    while k < raw.len() {
        let width = match raw[k] {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 0,
        };
        let c = (width > 0 && k + width <= raw.len())
            .then(|| std::str::from_utf8(&raw[k..k + width]).ok())
            .flatten()
            .and_then(|s| s.chars().next());
        match c {
            Some(c) => {
                out.push(c, offsets[k]);
                k += width;
            }
            None => {
                out.push(char::REPLACEMENT_CHARACTER, offsets[k]);
                k += 1;
            }
        }
    }
    Some(end)
}

/// Four hex digits at `at`.
fn code_unit(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0, |value, byte| Some(value * 16 + hex_value(*byte)?))
}

/// A JSON string escape (`\"`, `\n`, `\u00e9`, a surrogate pair); None when `at` starts none.
fn json_escape(bytes: &[u8], at: usize, out: &mut Reading) -> Option<usize> {
    let (c, end) = match *bytes.get(at + 1)? {
        b'"' => ('"', at + 2),
        b'\\' => ('\\', at + 2),
        b'/' => ('/', at + 2),
        b'\'' => ('\'', at + 2),
        b'b' => ('\u{8}', at + 2),
        b'f' => ('\u{c}', at + 2),
        b'n' => ('\n', at + 2),
        b'r' => ('\r', at + 2),
        b't' => ('\t', at + 2),
        b'u' => {
            let first = code_unit(bytes, at + 2)?;
            if (0xd800..0xdc00).contains(&first) && bytes.get(at + 6..at + 8) == Some(b"\\u") {
                let second = code_unit(bytes, at + 8)?;
                let joined = 0x10000 + ((first - 0xd800) << 10) + (second.checked_sub(0xdc00)?);
                (char::from_u32(joined)?, at + 12)
            } else {
                (char::from_u32(first)?, at + 6)
            }
        }
        _ => return None,
    };
    out.push(c, at);
    Some(end)
}

/// An HTML character reference (`&quot;`, `&#34;`, `&#x22;`); None when `at` starts none.
fn html_reference(source: &str, at: usize, out: &mut Reading) -> Option<usize> {
    let rest = source.get(at + 1..)?;
    let end = rest.char_indices().take(12).find(|(_, c)| *c == ';')?.0;
    let name = &rest[..end];
    let c = match name {
        "quot" => '"',
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        _ => {
            let number = name.strip_prefix('#')?;
            let value = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(value)?
        }
    };
    out.push(c, at);
    Some(at + 1 + end + 1)
}

/// What may stand right before a whole value.
fn opens(c: Option<char>) -> bool {
    c.is_none_or(|c| {
        matches!(
            c,
            '=' | '"'
                | '\''
                | ':'
                | '>'
                | '('
                | '['
                | '{'
                | ','
                | '/'
                | '?'
                | '&'
                | '#'
                | '\n'
                | '\r'
        )
    })
}

/// What may stand right after a whole value.
fn closes(c: Option<char>) -> bool {
    c.is_none_or(|c| {
        matches!(
            c,
            '&' | '"' | '\'' | ';' | '#' | '<' | ')' | ']' | '}' | ',' | '/' | '?' | '\n' | '\r'
        )
    })
}

/// Whether `text[from..to]` is a whole value: the whole text, or between delimiters.
fn whole_value(text: &str, from: usize, to: usize) -> bool {
    opens(text[..from].chars().next_back()) && closes(text[to..].chars().next())
}

/// A span of a text to hide, in its bytes, and how many characters the secret there has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: usize,
    pub to: usize,
    pub chars: usize,
}

/// Where `secret` (its chars: `chars`) stands in `text`, as a secret of its own or (a start of
/// it) as a whole value; the spans are `text`'s, mapped through `reading` when it was read in a
/// spelling.
pub fn find(
    text: &str,
    secret: &str,
    chars: &[char],
    reading: Option<&Reading>,
    into: &mut Vec<Span>,
) {
    let mut push = |from: usize, to: usize, count: usize| {
        let (from, to) = match reading {
            Some(reading) => reading.source_span(from, to),
            None => (from, to),
        };
        into.push(Span {
            from,
            to,
            chars: count,
        });
    };
    if chars.len() < ANYWHERE {
        for (from, found) in text.match_indices(secret) {
            if whole_value(text, from, from + found.len()) {
                push(from, from + found.len(), chars.len());
            }
        }
        return;
    }
    let head: String = chars[..ANYWHERE].iter().collect();
    let mut from = 0;
    while let Some(found) = text[from..].find(&head) {
        let start = from + found;
        // How far the text goes on as the secret does.
        let mut end = start;
        let mut matched = 0;
        for (c, expected) in text[start..].chars().zip(chars) {
            if c != *expected {
                break;
            }
            end += c.len_utf8();
            matched += 1;
        }
        if matched == chars.len() || whole_value(text, start, end) {
            push(start, end, matched);
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
}

/// Runs of base64 in `text` whose decoding holds one of `secrets` (each `ANYWHERE` characters
/// or more, or a whole value of the decoding, as `user:pass` holds `pass`).
pub fn find_base64(text: &str, secrets: &[(String, Vec<char>)], into: &mut Vec<Span>) {
    use base64::Engine;
    let indifferent = base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let engines = [
        base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, indifferent),
        base64::engine::GeneralPurpose::new(&base64::alphabet::URL_SAFE, indifferent),
    ];
    let is_base64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !is_base64(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_base64(bytes[at]) {
            at += 1;
        }
        let mut end = at;
        while end < bytes.len() && bytes[end] == b'=' && end - at < 2 {
            end += 1;
        }
        if at - start < BASE64_RUN {
            continue;
        }
        let run = &text[start..end];
        let decoded = engines.iter().find_map(|engine| engine.decode(run).ok());
        let Some(decoded) = decoded else { continue };
        let decoded = String::from_utf8_lossy(&decoded);
        let holds = secrets.iter().any(|(secret, chars)| {
            let mut found = Vec::new();
            find(&decoded, secret, chars, None, &mut found);
            found.iter().any(|span| span.chars == chars.len())
        });
        if holds {
            into.push(Span {
                from: start,
                to: end,
                chars: decoded.chars().count(),
            });
        }
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, plus: bool) -> String {
        decode(text, plus).unwrap().text
    }

    #[test]
    fn each_spelling_is_read_back_to_its_source() {
        assert_eq!(read("pw=Kx%229q%232w+x", true), "pw=Kx\"9q#2w x");
        assert_eq!(read("pw=Kx%229q%232w+x", false), "pw=Kx\"9q#2w+x");
        assert_eq!(
            read(r#"{"pw":"Kx\"9q#2w\u00e9\ud83d\ude00"}"#, true),
            "{\"pw\":\"Kx\"9q#2wé😀\"}"
        );
        assert_eq!(
            read("v=&quot;a&#34;b&#x22;c&amp;&bogus;", false),
            "v=\"a\"b\"c&&bogus;"
        );
        assert_eq!(read("%C3%A9%ff%", false), "é\u{fffd}%");
        let reading = decode("a%22b", false).unwrap();
        assert_eq!(reading.source_span(1, 2), (1, 4));
        assert_eq!(reading.source_span(2, 3), (4, 5));
    }

    #[test]
    fn a_start_is_found_as_a_whole_value_only() {
        let secret = "Summer2024!";
        let chars: Vec<char> = secret.chars().collect();
        let spans = |text: &str| {
            let mut found = Vec::new();
            find(text, secret, &chars, None, &mut found);
            found
        };
        assert_eq!(spans("Summer sale").len(), 0);
        assert_eq!(spans("Summertime").len(), 0);
        assert_eq!(
            spans("v=Summ&x=1"),
            [Span {
                from: 2,
                to: 6,
                chars: 4
            }]
        );
        assert_eq!(spans("{\"v\":\"Summer20\"}").len(), 1);
        assert_eq!(spans("v=Sum").len(), 0, "shorter than ANYWHERE");
        assert_eq!(
            spans("xSummer2024!y"),
            [Span {
                from: 1,
                to: 12,
                chars: 11
            }]
        );
        let short: Vec<char> = "8Z".chars().collect();
        let mut found = Vec::new();
        find("A8Z3 pw=8Z", "8Z", &short, None, &mut found);
        assert_eq!(
            found,
            [Span {
                from: 8,
                to: 10,
                chars: 2
            }]
        );
    }

    #[test]
    fn basic_credentials_are_found_in_base64() {
        use base64::Engine;
        let secret = ("hunter2pass".to_string(), "hunter2pass".chars().collect());
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("ana:hunter2pass")
        );
        let mut found = Vec::new();
        find_base64(&header, std::slice::from_ref(&secret), &mut found);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].from, found[0].to), (6, header.len()));
        found.clear();
        find_base64("Basic YW5hOm90aGVycGFzcw==", &[secret], &mut found);
        assert!(found.is_empty());
    }
}
