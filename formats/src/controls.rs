//! Control characters out of everything the writers write. A job's name or a cue's text may hold
//! C0 or C1 control characters (an API client may send `before\u0000after`); written as they are,
//! they break files: libass refuses a whole ASS track for a NUL in `Title:`, XML forbids most C0
//! characters in TTML, and in EBU-STL they are teletext control codes. So every writer's header
//! fields and text lose them: tab, vertical tab, form feed and NEL become a space, every other
//! control character except CR and LF (the line breaks the writers split at) is dropped.
//!
//! Text without any control character, nearly all text, is not copied: one scan finds none.

use std::borrow::Cow;

use cuecraft_engine::Cue;

use crate::scan::any_byte;
use crate::WriteOptions;

/// Whether `s` holds a control character other than CR and LF.
#[inline]
pub(crate) fn has_control(s: &str) -> bool {
    let bytes = s.as_bytes();
    // C0 and DEL are single bytes; every C1 character (U+0080 to U+009F) starts with C2h.
    any_byte(bytes, |x| {
        (x < 0x20) & (x != b'\r') & (x != b'\n') | (x == 0x7F) | (x == 0xC2)
    }) && s.chars().any(|c| c.is_control() && c != '\r' && c != '\n')
}

/// `s` with tab, vertical tab, form feed and NEL as spaces and the other control characters
/// except CR and LF removed.
pub(crate) fn without_controls(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            '\r' | '\n' => Some(c),
            '\t' | '\u{b}' | '\u{c}' | '\u{85}' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}

/// `s`, borrowed when it has no control character to remove.
pub(crate) fn cleaned(s: &str) -> Cow<'_, str> {
    if has_control(s) {
        Cow::Owned(without_controls(s))
    } else {
        Cow::Borrowed(s)
    }
}

/// The options with their text fields (title, language) cleaned.
pub(crate) fn options(opts: &WriteOptions) -> Cow<'_, WriteOptions> {
    if !has_control(&opts.title) && !has_control(&opts.language) {
        return Cow::Borrowed(opts);
    }
    Cow::Owned(WriteOptions {
        title: without_controls(&opts.title),
        language: without_controls(&opts.language),
        ..opts.clone()
    })
}

/// The cues with their lines cleaned; borrowed when no line holds a control character.
pub(crate) fn cues(cues: &[Cue]) -> Cow<'_, [Cue]> {
    if !cues.iter().any(|c| c.lines.iter().any(|l| has_control(l))) {
        return Cow::Borrowed(cues);
    }
    Cow::Owned(
        cues.iter()
            .map(|c| Cue {
                lines: c.lines.iter().map(|l| cleaned(l).into_owned()).collect(),
                ..c.clone()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c0_and_c1_controls_go_line_breaks_stay() {
        assert_eq!(without_controls("before\u{0}after"), "beforeafter");
        assert_eq!(without_controls("a\tb\u{b}c\u{c}d\u{85}e"), "a b c d e");
        assert_eq!(without_controls("x\u{1b}[1m\u{7f}\u{9b}y"), "x[1my");
        assert_eq!(without_controls("one\r\ntwo\nthree"), "one\r\ntwo\nthree");
        for s in ["plain", "café ½ ©\u{a0}nbsp", "line\r\nbreak", "日本語", ""] {
            assert!(!has_control(s), "{s:?}");
            assert!(matches!(cleaned(s), Cow::Borrowed(_)));
        }
        for s in ["\u{0}", "a\u{1f}", "\u{7f}", "\u{80}", "x\u{9f}y", "\t"] {
            assert!(has_control(s), "{s:?}");
        }
    }
}
