//! User input inside messages: a topology's name, a line the TOML parser refused, a setting's
//! value, a file name. A terminal takes control characters in them as commands (`ESC [2J`
//! clears the screen, `ESC ]0;...BEL` retitles the window, a newline starts a line the reader
//! takes for the program's own), and an input of a mebibyte would be echoed whole. So every
//! message that shows input shows it through [`echo`] (escaped and cut), and what is printed
//! passes [`escaped`] too.

/// The most characters of one input a message shows.
pub const ECHO_CHARS: usize = 200;

/// Whether `c` must not reach a terminal as it is: a control character (C0, DEL, C1), or a
/// character that reorders or splits what a reader sees (bidirectional controls, line and
/// paragraph separators, the byte-order mark).
fn unsafe_for_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// `text` with every character that must not reach a terminal as it is (a control character,
/// a bidirectional control, a line or paragraph separator, the byte-order mark) written as Rust
/// writes it in a string (`\n`, `\t`, `\u{1b}`): printable, on one line.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if unsafe_for_a_terminal(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// `input` as a message shows it: [`escaped`], and cut at [`ECHO_CHARS`] characters shown,
/// with `…` and how long it was.
pub fn echo(input: &str) -> String {
    clipped(input, ECHO_CHARS)
}

/// [`echo`] with another length: `input` [`escaped`], at most `chars` characters of it shown
/// (an escape counts as the characters it takes).
pub fn clipped(input: &str, chars: usize) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for c in input.chars() {
        let width = if unsafe_for_a_terminal(c) { c.escape_debug().count() } else { 1 };
        if shown + width > chars {
            return format!("{out}… ({} bytes in all)", input.len());
        }
        shown += width;
        match width {
            1 => out.push(c),
            _ => out.extend(c.escape_debug()),
        }
    }
    out
}

/// A path as a message shows it: [`escaped`] (bytes that are not UTF-8 as U+FFFD), cut at
/// 400 characters.
pub fn path(path: &std::path::Path) -> String {
    clipped(&path.to_string_lossy(), 400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_written_out_and_long_input_cut() {
        assert_eq!(escaped("a\u{1b}[2J\u{1b}]0;t\u{7}\n\u{9b}b"), r"a\u{1b}[2J\u{1b}]0;t\u{7}\n\u{9b}b");
        assert_eq!(escaped("\u{202e}evil\u{2028}"), r"\u{202e}evil\u{2028}");
        assert_eq!(escaped("plain ünïcode \\ \"quotes\""), "plain ünïcode \\ \"quotes\"");
        assert_eq!(echo("short"), "short");
        let long = "é".repeat(1 << 20);
        let shown = echo(&long);
        assert!(shown.starts_with(&"é".repeat(ECHO_CHARS)) && shown.ends_with("… (2097152 bytes in all)"), "{shown}");
        assert_eq!(shown.chars().count(), ECHO_CHARS + "… (2097152 bytes in all)".chars().count());
        assert_eq!(clipped("abcdef", 3), "abc… (6 bytes in all)");
        assert_eq!(clipped("abc", 3), "abc");
        assert_eq!(clipped("ab\u{1b}cd", 8), r"ab\u{1b}… (5 bytes in all)", "escapes count as they are shown");
        assert_eq!(clipped(&"\u{1b}".repeat(1000), 20), r"\u{1b}\u{1b}\u{1b}… (1000 bytes in all)");
    }
}
