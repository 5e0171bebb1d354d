//! PTX text as tokens, each with its line: identifiers (with PTX's `%`, `$`, `.`, `_` and
//! digits), numbers (decimal, hex, octal, and hex-coded floats `0f...`/`0d...`), and punctuation.
//! Comments (`//`, `/* */`) are dropped.

use crate::LoadError;

/// One token, borrowing its text: a module of a million instructions is cut into millions of
/// them, and none is copied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Tok<'t> {
    /// A name, a directive (`.reg`), a register (`%r1`), a label (`$L__BB0_2`) or an opcode with
    /// its modifiers (`ld.global.u32`).
    Word(&'t str),
    /// An integer literal, as written (sign applied).
    Int(i128),
    /// A float literal's bits: `0fXXXXXXXX` (f32) or `0dXXXXXXXXXXXXXXXX` (f64), or a decimal one.
    Float { bits: u64, double: bool },
    /// One of `{ } ( ) [ ] < > , ; : @ ! = + - |`.
    Punct(char),
    /// A quoted string (`.pragma "nounroll"`), without its quotes.
    Str(&'t str),
}

/// Tokens with their lines, read one at a time: a module of millions of tokens is never held
/// as a list of them.
pub(crate) struct Lexer<'t> {
    text: &'t str,
    i: usize,
    line: u32,
}

impl<'t> Lexer<'t> {
    pub(crate) fn new(text: &'t str) -> Lexer<'t> {
        Lexer { text, i: 0, line: 1 }
    }

    /// The next token and its line; `None` at the end of the text.
    pub(crate) fn next_token(&mut self) -> Result<Option<(Tok<'t>, u32)>, LoadError> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let (mut i, mut line) = (self.i, self.line);
        let mut found = None;
        while i < bytes.len() && found.is_none() {
            let c = bytes[i];
            match c {
                b'\n' => {
                    line += 1;
                    i += 1;
                }
                c if c.is_ascii_whitespace() => i += 1,
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                        line += (bytes[i] == b'\n') as u32;
                        i += 1;
                    }
                    i += 2;
                }
                b'{' | b'}' | b'(' | b')' | b'[' | b']' | b'<' | b'>' | b',' | b';' | b':' | b'@' | b'!' | b'='
                | b'+' | b'|' => {
                    found = Some((Tok::Punct(c as char), line));
                    i += 1;
                }
                b'"' => {
                    let start = i + 1;
                    i = start;
                    while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                        i += 1;
                    }
                    if bytes.get(i) != Some(&b'"') {
                        return Err(LoadError::Syntax { line, what: "a string that does not end".into() });
                    }
                    found = Some((Tok::Str(&text[start..i]), line));
                    i += 1;
                }
                b'-' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    let (tok, next) = number(text, i + 1, line, true)?;
                    found = Some((tok, line));
                    i = next;
                }
                b'-' => {
                    found = Some((Tok::Punct('-'), line));
                    i += 1;
                }
                c if c.is_ascii_digit() => {
                    let (tok, next) = number(text, i, line, false)?;
                    found = Some((tok, line));
                    i = next;
                }
                c if is_word(c) => {
                    let start = i;
                    // `::` inside a modifier (`.shared::cta`, `.L2::cache_hint`) continues the word.
                    let scoped = |i: usize| {
                        bytes[i] == b':'
                            && bytes.get(i + 1) == Some(&b':')
                            && bytes.get(i + 2).is_some_and(|&c| is_word(c) || c.is_ascii_digit())
                    };
                    while i < bytes.len() && (is_word(bytes[i]) || bytes[i].is_ascii_digit() || scoped(i)) {
                        i += if bytes[i] == b':' { 2 } else { 1 };
                    }
                    found = Some((Tok::Word(&text[start..i]), line));
                }
                _ => return Err(LoadError::Syntax { line, what: format!("unexpected character {:?}", c as char) }),
            }
        }
        (self.i, self.line) = (i, line);
        Ok(found)
    }
}

/// Every token with its line.
#[cfg(test)]
pub(crate) fn tokens(text: &str) -> Result<Vec<(Tok<'_>, u32)>, LoadError> {
    let mut lexer = Lexer::new(text);
    std::iter::from_fn(|| lexer.next_token().transpose()).collect()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'.' | b'%' | b'$')
}

/// A number starting at `i` (after a minus sign when `negative`): the token and where it ends.
fn number(text: &str, i: usize, line: u32, negative: bool) -> Result<(Tok<'_>, usize), LoadError> {
    let bytes = text.as_bytes();
    let mut end = i;
    while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'.') {
        end += 1;
    }
    // An exponent's sign belongs to the number (`1.5e-3`).
    while end < bytes.len() && matches!(bytes[end], b'+' | b'-') && matches!(bytes[end - 1], b'e' | b'E') {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
            end += 1;
        }
    }
    let word = &text[i..end];
    let bad = || LoadError::Syntax { line, what: format!("not a number: {word}") };
    let lower = word.to_ascii_lowercase();
    let tok = if let Some(hex) = lower.strip_prefix("0f").filter(|h| h.len() == 8) {
        let bits = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
        let bits = if negative { bits ^ 0x8000_0000 } else { bits };
        Tok::Float { bits: bits as u64, double: false }
    } else if let Some(hex) = lower.strip_prefix("0d").filter(|h| h.len() == 16) {
        let bits = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
        let bits = if negative { bits ^ (1 << 63) } else { bits };
        Tok::Float { bits, double: true }
    } else if lower.contains('.') || (lower.contains('e') && !lower.starts_with("0x")) {
        let v: f64 = lower.parse().map_err(|_| bad())?;
        Tok::Float { bits: (if negative { -v } else { v }).to_bits(), double: true }
    } else {
        let digits = lower.trim_end_matches('u');
        let v = if let Some(hex) = digits.strip_prefix("0x") {
            i128::from_str_radix(hex, 16)
        } else if let Some(bin) = digits.strip_prefix("0b") {
            i128::from_str_radix(bin, 2)
        } else if digits.len() > 1 && digits.starts_with('0') {
            i128::from_str_radix(&digits[1..], 8)
        } else {
            digits.parse::<i128>()
        }
        .map_err(|_| bad())?;
        Tok::Int(if negative { -v } else { v })
    };
    Ok((tok, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_their_lines_and_floats_their_bits() {
        let t = tokens("// c\nld.param.u64 %rd1, [p+8]; /* x\n */ mov.f32 %f1, 0f40000000;\n-1 0x10 010").unwrap();
        assert_eq!(t[0], (Tok::Word("ld.param.u64"), 2));
        assert!(t.contains(&(Tok::Punct('+'), 2)));
        assert!(t.contains(&(Tok::Float { bits: 0x4000_0000, double: false }, 3)));
        let ints: Vec<_> = t.iter().filter_map(|(t, _)| if let Tok::Int(v) = t { Some(*v) } else { None }).collect();
        assert_eq!(ints, [8, -1, 16, 8]);
    }

    #[test]
    fn what_is_not_ptx_is_a_syntax_error_with_its_line() {
        assert_eq!(
            tokens("mov.u32 %r1, 1;\n#").unwrap_err(),
            LoadError::Syntax { line: 2, what: "unexpected character '#'".into() }
        );
    }
}
