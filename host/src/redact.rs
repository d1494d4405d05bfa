//! Messages of child processes and plug-ins (recognizers, ffmpeg) made fit to show a user: every
//! path of the server's file system removed, control characters dropped, length bounded.
//!
//! The pipeline applies [`message`] where a job's or a transcript's `error` is recorded; the
//! operator's log keeps the full text. A path is recognised by its shape, so a message from any
//! program is covered, whatever the program and wherever the path comes from:
//! - absolute (`/srv/data/work/x.wav`), home (`~/x`), explicitly relative (`./x`, `../x`) and
//!   `file:` URLs, also inside quotes, where the whole quoted text is taken (so spaces in a quoted
//!   path are covered);
//! - other relative paths (`data/work/x.wav`, `a/b/c`): a word with a `/` whose last part has an
//!   extension, or with two `/` or more. Words such as `Input/output`, `and/or` or `audio/wav`
//!   stay, and so do URLs with a host (`https://…`), which are not server paths.
//!
//! A bare file name (`rec.py`) is kept: it says which file, not where the server keeps it.

/// What a removed path is replaced with.
pub const PLACEHOLDER: &str = "[path]";

/// Longest message kept, characters; longer ones end with `…`.
const MAX_CHARS: usize = 1000;

/// Characters that end a word when looking for paths.
fn is_delimiter(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\'' | '"'
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
                | ','
                | ';'
                | '|'
                | '='
        )
}

/// Whether `word` (no delimiters inside) starts like a path.
fn starts_like_path(word: &str) -> bool {
    word.starts_with('/')
        || word.starts_with("~/")
        || word.starts_with("./")
        || word.starts_with("../")
        || word.starts_with("file:")
}

/// Whether `word` (no delimiters, trailing punctuation removed) is a path.
fn is_path(word: &str) -> bool {
    if word.contains("://") && !word.starts_with("file:") {
        return false;
    }
    if starts_like_path(word) {
        return true;
    }
    if !word.contains('/')
        || word
            .chars()
            .all(|c| c.is_ascii_digit() || c == '/' || c == '.')
    {
        return false;
    }
    let last = word.rsplit('/').next().unwrap_or_default();
    let has_extension = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty());
    has_extension || word.matches('/').count() >= 2
}

/// `text` with every server path replaced by [`PLACEHOLDER`], terminal escapes and control
/// characters other than line breaks and tabs removed, and at most [`MAX_CHARS`] characters.
pub fn message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        // A quoted path is taken whole, spaces included.
        if matches!(c, '\'' | '"' | '`') {
            let inner = &rest[1..];
            if let Some(end) = inner.find([c, '\n']) {
                let quoted = &inner[..end];
                if inner[end..].starts_with(c) && starts_like_path(quoted) {
                    out.push(c);
                    out.push_str(PLACEHOLDER);
                    out.push(c);
                    rest = &inner[end + 1..];
                    continue;
                }
            }
        }
        if is_delimiter(c) {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest.find(is_delimiter).unwrap_or(rest.len());
        let word = &rest[..end];
        let core = word.trim_end_matches([':', '.', '!', '?']);
        if is_path(core) {
            out.push_str(PLACEHOLDER);
            out.push_str(&word[core.len()..]);
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    let cleaned = without_controls(&out);
    let trimmed = cleaned.trim();
    if trimmed.chars().count() <= MAX_CHARS {
        return trimmed.to_string();
    }
    let mut bounded: String = trimmed.chars().take(MAX_CHARS).collect();
    bounded.push('…');
    bounded
}

/// `text` without terminal escape sequences (`ESC [ … letter`) and control characters other than
/// line breaks and tabs.
fn without_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for p in chars.by_ref() {
                if ('@'..='~').contains(&p) {
                    break;
                }
            }
        } else if !c.is_control() || c == '\n' || c == '\t' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_go_and_the_sentence_stays() {
        assert_eq!(
            message("error: failed to read audio file '/srv/cc/data/work/0123.wav'"),
            "error: failed to read audio file '[path]'"
        );
        assert_eq!(
            message("could not start recognizer /opt/asr/rec.py: Permission denied (os error 13)"),
            "could not start recognizer [path]: Permission denied (os error 13)"
        );
        assert_eq!(
            message("file:/srv/data/work/ab.wav.tmp: No space left on device"),
            "[path]: No space left on device"
        );
        assert_eq!(
            message("model=/models/ggml base.bin, threads=4"),
            "model=[path] base.bin, threads=4"
        );
    }

    #[test]
    fn quoted_paths_with_spaces_go_whole() {
        assert_eq!(
            message(r#"cannot open "/home/op/my models/en us/mdef" for reading"#),
            r#"cannot open "[path]" for reading"#
        );
        assert_eq!(
            message("Folder '../models/en-us' does not exist."),
            "Folder '[path]' does not exist."
        );
    }

    #[test]
    fn relative_paths_go() {
        assert_eq!(
            message("cannot read data/work/0123.wav."),
            "cannot read [path]."
        );
        assert_eq!(message("see ./rec.log and ~/x"), "see [path] and [path]");
        assert_eq!(message("missing a/b/c"), "missing [path]");
    }

    #[test]
    fn words_with_slashes_that_are_not_paths_stay() {
        for text in [
            "Input/output error",
            "time base 1/25, 44.1/48 kHz",
            "expected audio/wav and/or text/plain",
            "see https://example.org/help.html",
            "the file rec.py failed",
        ] {
            assert_eq!(message(text), text);
        }
    }

    #[test]
    fn control_characters_go_and_length_is_bounded() {
        assert_eq!(
            message("\u{1b}[31mfatal\u{1b}[0m: bad\u{0}\n"),
            "fatal: bad"
        );
        let long = "x".repeat(5000);
        let m = message(&long);
        assert_eq!(m.chars().count(), MAX_CHARS + 1);
        assert!(m.ends_with('…'));
    }
}
