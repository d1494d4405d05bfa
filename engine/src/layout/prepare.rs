//! Words -> layout units: sorted and trimmed times, display text (cleaned, capitalised, forbidden
//! characters replaced), grapheme counts measured once, over-long words cut into line-sized pieces.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use crate::{Break, Word};

/// The word ends a sentence (`.`, `?`, `!`, `。`, `？`, `！`, before closing quotes).
pub const SENT_END: u8 = 1;
/// The word ends with clause punctuation (`,`, `;`, `:`, a dash).
pub const CLAUSE: u8 = 2;
/// An article, preposition or conjunction: the line or cue should not break after it.
pub const WEAK: u8 = 4;
/// The editor pinned a line break after this word.
pub const LINE_AFTER: u8 = 8;
/// The editor pinned a cue break after this word.
pub const CUE_AFTER: u8 = 16;
/// A piece of an over-long word that is not its last: breaking after it cuts the word.
pub const MID_WORD: u8 = 32;
/// The first (or only) piece of its word: the cue holding it owns the word.
pub const FIRST_PIECE: u8 = 64;
/// The text lives in the arena rather than in the word.
pub const IN_ARENA: u8 = 128;

/// A comma or semicolon (for splitOnPunctuation's preferred line breaks).
pub const COMMA: u16 = 1;
/// `SENT_END` set by a pause in a transcript without sentence punctuation, not by the text
/// (splitOnPunctuation, which is literal, ignores it).
pub const PAUSE_END: u16 = 2;
/// A manual join: the word's cue goes on with the next word ([`crate::Break::Join`]).
pub const JOIN: u16 = 4;
/// The manual cue break after the word ends a cue timed by hand ([`crate::Break::Timed`]).
pub const TIMED: u16 = 8;

/// One displayable piece of text: a whole word, or a line-sized piece of an over-long word.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    /// Index of the word in the sorted order.
    pub word: u32,
    /// Byte range of the display text (in the word's text or the arena).
    pub lo: u32,
    /// End of the byte range.
    pub hi: u32,
    /// Grapheme clusters of the display text (>= 1).
    pub g: u32,
    /// Display width (East Asian wide = 2), for balancing lines visually.
    pub w: u32,
    /// Whether a space separates this unit from the previous one on the same line.
    pub sep: bool,
    /// Trimmed start, ms.
    pub start: i64,
    /// Trimmed end, ms (>= start).
    pub end: i64,
    /// Speaker number.
    pub speaker: u32,
    /// `SENT_END` .. `IN_ARENA`.
    pub flags: u8,
    /// `COMMA`, `PAUSE_END`.
    pub extra: u16,
}

impl Unit {
    /// Whether `self` and `other` are the same unit but for their word's position.
    pub fn same_but_word(&self, other: &Unit) -> bool {
        let a = Unit { word: 0, ..*self };
        let b = Unit { word: 0, ..*other };
        (
            a.lo, a.hi, a.g, a.w, a.sep, a.start, a.end, a.speaker, a.flags, a.extra,
        ) == (
            b.lo, b.hi, b.g, b.w, b.sep, b.start, b.end, b.speaker, b.flags, b.extra,
        )
    }

    /// Whether `flag` is set.
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Where unit texts live: in the words (`order` maps a unit's reading position to the input index;
/// `None` when the input was already sorted) or in the arena.
#[derive(Clone, Copy)]
pub struct Texts<'a> {
    /// The input words.
    pub words: &'a [Word],
    /// Reading order, when it differs from input order.
    pub order: Option<&'a [u32]>,
    /// Display texts that differ from the words' own.
    pub arena: &'a str,
}

impl<'a> Texts<'a> {
    /// The input index of the word at reading position `k`.
    #[inline]
    pub fn index(&self, k: usize) -> usize {
        match self.order {
            Some(o) => o.get(k).map_or(usize::MAX, |&i| i as usize),
            None => k,
        }
    }

    /// The display text of unit `u`.
    #[inline]
    pub fn get(&self, u: &Unit) -> &'a str {
        let src: &str = if u.has(IN_ARENA) {
            self.arena
        } else {
            self.words
                .get(self.index(u.word as usize))
                .map_or("", |w| &*w.text)
        };
        src.get(u.lo as usize..u.hi as usize).unwrap_or("")
    }
}

/// Replaces forbidden graphemes.
pub struct Forbid {
    map: HashMap<String, String>,
    ascii: [bool; 128],
    other: HashSet<char>,
}

impl Forbid {
    /// The replacement table; the first rule naming a grapheme wins. `None` when there are no rules.
    pub fn new(rules: &[crate::ForbiddenRule]) -> Option<Forbid> {
        if rules.is_empty() {
            return None;
        }
        let mut f = Forbid {
            map: HashMap::new(),
            ascii: [false; 128],
            other: HashSet::new(),
        };
        for r in rules {
            for g in r.chars.graphemes(true) {
                if f.map.contains_key(g) {
                    continue;
                }
                f.map.insert(g.to_string(), r.replacement.clone());
                if let Some(c) = g.chars().next() {
                    if c.is_ascii() {
                        f.ascii[c as usize] = true;
                    } else {
                        f.other.insert(c);
                    }
                }
            }
        }
        Some(f)
    }

    /// `s` with every forbidden grapheme replaced, or `None` when nothing changes.
    pub fn apply(&self, s: &str) -> Option<String> {
        let hit = s.chars().any(|c| {
            if c.is_ascii() {
                self.ascii[c as usize]
            } else {
                self.other.contains(&c)
            }
        });
        if !hit {
            return None;
        }
        let mut out = String::with_capacity(s.len());
        let mut changed = false;
        for g in s.graphemes(true) {
            match self.map.get(g) {
                Some(r) => {
                    out.push_str(r);
                    changed = true;
                }
                None => out.push_str(g),
            }
        }
        changed.then_some(out)
    }
}

/// Grapheme clusters and display width of `s`, with an ASCII fast path.
#[inline]
pub fn measure(s: &str) -> (u32, u32) {
    if s.is_ascii() && !s.as_bytes().contains(&b'\r') {
        let n = s.len() as u32;
        return (n, n);
    }
    measure_common(s).unwrap_or_else(|| {
        let g = s.graphemes(true).count() as u32;
        (g, UnicodeWidthStr::width(s) as u32)
    })
}

/// Graphemes and width of text made only of characters that always stand alone as a cluster
/// (printable Latin, Greek, Cyrillic, Hebrew and Arabic letters, CJK ideographs, kana, Hangul
/// syllables); `None` when any other character is present.
fn measure_common(s: &str) -> Option<(u32, u32)> {
    let (mut g, mut w) = (0u32, 0u32);
    for c in s.chars() {
        let wide = match c as u32 {
            0x20..=0x7E
            | 0xA0..=0xAC
            | 0xAE..=0x2FF
            | 0x370..=0x482
            | 0x5D0..=0x5EA
            | 0x620..=0x64A => false,
            0x3041..=0x3096 | 0x30A1..=0x30FA | 0x4E00..=0x9FFF | 0xAC00..=0xD7A3 => true,
            _ => return None,
        };
        g += 1;
        w += 1 + wide as u32;
    }
    Some((g, w))
}

/// Chinese and Japanese scripts (and their punctuation), which are written without spaces.
fn is_cjk(c: char) -> bool {
    // Below the first range (every Latin, Greek, Cyrillic, Hebrew, Arabic letter): one compare.
    if (c as u32) < 0x2E80 {
        return false;
    }
    matches!(c as u32,
        0x2E80..=0x2FFF | 0x3000..=0x303F | 0x3040..=0x30FF | 0x3100..=0x31FF
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFF65
        | 0x20000..=0x3FFFF)
}

/// Trailing closing quotes and brackets, which do not hide the punctuation before them.
fn strip_closers(s: &str) -> &str {
    s.trim_end_matches(['"', '\'', ')', ']', '}', '»', '”', '’', '」', '』', '）'])
}

/// Whether any word of `words` ends a sentence by its punctuation (stops at the first that does).
pub fn any_sentence_end(words: &[Word]) -> bool {
    words.iter().any(|w| ends_sentence(&w.text))
}

/// Whether a word ends a sentence by its punctuation, as cue breaking reads it (`SENT_END`).
pub fn ends_sentence(text: &str) -> bool {
    punctuation_flags(text.trim_end()).0 & SENT_END != 0
}

/// The break flags (`SENT_END`, `CLAUSE`) and `COMMA` that a word's final punctuation gives.
#[inline]
fn punctuation_flags(s: &str) -> (u8, u16) {
    // Most words end in a letter, a digit or ASCII punctuation, read from the last byte alone
    // (a call to trim the closers, for one word in six, was a percent of the layout).
    match s.as_bytes().last() {
        Some(b) if b.is_ascii_alphanumeric() => return (0, 0),
        Some(b'.' | b'?' | b'!') => return (SENT_END, 0),
        Some(b',' | b';') => return (CLAUSE, COMMA),
        Some(b':') => return (CLAUSE, 0),
        _ => {}
    }
    let t = strip_closers(s);
    match t.chars().next_back() {
        Some('.' | '?' | '!' | '。' | '？' | '！' | '‽') => (SENT_END, 0),
        Some(',' | ';' | '，' | '；' | '、') => (CLAUSE, COMMA),
        Some(':' | '：' | '—' | '–' | '…') => (CLAUSE, 0),
        _ => (0, 0),
    }
}

/// Articles, prepositions, conjunctions, possessives and subject pronouns after which a break reads
/// badly (English first, and the commonest ones of Dutch, German, French and Spanish).
const WEAK_WORDS: [&[u8]; 67] = [
    b"a", b"an", b"the", b"and", b"or", b"but", b"nor", b"of", b"to", b"in", b"on", b"at", b"by",
    b"for", b"with", b"from", b"into", b"onto", b"upon", b"about", b"as", b"if", b"than", b"that",
    b"because", b"while", b"my", b"your", b"his", b"her", b"our", b"their", b"its", b"this",
    b"these", b"those", b"i", b"he", b"she", b"we", b"they", b"it", b"who", b"which", b"whose",
    b"where", b"when", b"until", b"unless", b"de", b"het", b"een", b"en", b"der", b"die", b"das",
    b"und", b"le", b"la", b"les", b"un", b"une", b"et", b"el", b"los", b"las", b"y",
];

/// A word of at most 7 bytes as one number: its bytes lower-cased (ASCII) in little-endian order,
/// its length in the top byte. Two such words have the same key exactly when they are equal
/// ignoring ASCII case.
const fn word_key(b: &[u8]) -> u64 {
    let mut k = (b.len() as u64) << 56;
    let mut i = 0;
    while i < b.len() && i < 7 {
        k |= (b[i].to_ascii_lowercase() as u64) << (8 * i);
        i += 1;
    }
    k
}

/// Slots of the weak-word table, as a power of two.
const WEAK_BITS: u32 = 8;

/// The multiplier of the weak-word table's hash, found by trying random odd numbers until no two
/// of the [`WEAK_WORDS`] share a slot, so that a lookup is one load and one compare. Another word
/// list still works (colliding keys go to the next free slot, and a lookup reads
/// [`WEAK_PROBES`] slots), only a little slower: a test says when it needs a new multiplier.
const WEAK_MUL: u64 = 0xf223_43ef_08fc_9945;

/// The slot of a [`word_key`] in [`WEAK_TABLE`] (before probing).
const fn weak_slot(key: u64) -> usize {
    (key.wrapping_mul(WEAK_MUL) >> (64 - WEAK_BITS)) as usize
}

/// [`WEAK_WORDS`] as [`word_key`]s in a hash table (0 is an empty slot: no key is 0, its length
/// byte is not), each at its slot or, when that is taken, the next free one; and the most slots
/// a lookup needs to read. A lookup is a few instructions where a binary search over the sorted
/// keys took seven dependent steps.
const WEAK_TABLE: ([u64; (1 << WEAK_BITS) + WEAK_WORDS.len()], usize) = {
    let mut table = [0u64; (1 << WEAK_BITS) + WEAK_WORDS.len()];
    let mut probes = 1;
    let mut n = 0;
    while n < WEAK_WORDS.len() {
        let k = word_key(WEAK_WORDS[n]);
        let mut at = weak_slot(k);
        while table[at] != 0 && table[at] != k {
            at += 1;
        }
        table[at] = k;
        if at + 1 - weak_slot(k) > probes {
            probes = at + 1 - weak_slot(k);
        }
        n += 1;
    }
    (table, probes)
};

/// The slots a lookup reads from its key's slot on (1 with the present words and multiplier).
const WEAK_PROBES: usize = WEAK_TABLE.1;

/// Whether `s` is one of the [`WEAK_WORDS`], in any letter case. `ascii`: `s` is known to be
/// ASCII (most words are, and preparation has checked it already).
fn is_weak(s: &str, ascii: bool) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 7 || !(ascii || s.is_ascii()) {
        return false;
    }
    let key = word_key(b);
    let at = weak_slot(key);
    WEAK_TABLE.0[at..at + WEAK_PROBES].contains(&key)
}

/// `s` with control characters and line breaks turned into single spaces, trimmed; `None` when
/// `s` has none.
pub fn clean(s: &str) -> Option<String> {
    // Control characters and non-space whitespace are all below 0x20, 0x7f, or start with one of
    // these UTF-8 lead bytes (U+0080-U+00A0, U+1680, U+2000-U+205F, U+3000).
    if !s
        .bytes()
        .any(|b| b < 0x20 || matches!(b, 0x7f | 0xc2 | 0xe1 | 0xe2 | 0xe3))
    {
        return None;
    }
    if !s
        .chars()
        .any(|c| c.is_control() || (c.is_whitespace() && c != ' '))
    {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_control() || c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    Some(out)
}

/// `s` with its first letter upper-cased (after leading quotes or `¿`), when that letter is lower
/// case and its capital is a single character; `None` otherwise.
fn capitalise(s: &str) -> Option<String> {
    let (at, c) = s.char_indices().find(|(_, c)| c.is_alphanumeric())?;
    if !c.is_lowercase() {
        return None;
    }
    let mut up = c.to_uppercase();
    let u = up.next()?;
    if up.next().is_some() {
        return None;
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push_str(&s[..at]);
    out.push(u);
    out.push_str(&s[at + c.len_utf8()..]);
    Some(out)
}

/// What preparation needs to know of the settings.
pub struct PrepOptions<'f> {
    /// Capitalise sentence starts (smart mode).
    pub capitalise: bool,
    /// Forbidden-character table.
    pub forbid: Option<&'f Forbid>,
    /// Longest piece of an over-long word, graphemes (>= 1).
    pub chunk: u32,
    /// In a transcript without sentence punctuation (a recogniser that gives none), a silence
    /// of at least this many ms after a word marks a sentence end for cue breaking (`PAUSE_END`);
    /// capitals are not added after it.
    pub pause_end: Option<i64>,
}

/// What a [`Preparer`] carries from word to word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PrepState {
    sentence_start: bool,
    prev_speaker: Option<u32>,
    prev_last_char: Option<char>,
}

impl PrepState {
    /// At the start of a transcript.
    pub const START: PrepState = PrepState {
        sentence_start: true,
        prev_speaker: None,
        prev_last_char: None,
    };
}

/// Turns words into units one at a time, carrying what it needs across words (sentence starts,
/// the previous speaker, whether a space separates scripts).
pub struct Preparer<'f> {
    opts: PrepOptions<'f>,
    sentence_start: bool,
    prev_speaker: Option<u32>,
    prev_last_char: Option<char>,
}

impl<'f> Preparer<'f> {
    /// A preparer in `state` (see [`Preparer::state`]).
    pub fn resume(opts: PrepOptions<'f>, state: PrepState) -> Preparer<'f> {
        Preparer {
            opts,
            sentence_start: state.sentence_start,
            prev_speaker: state.prev_speaker,
            prev_last_char: state.prev_last_char,
        }
    }

    /// What it carries to the next word.
    pub fn state(&self) -> PrepState {
        PrepState {
            sentence_start: self.sentence_start,
            prev_speaker: self.prev_speaker,
            prev_last_char: self.prev_last_char,
        }
    }

    /// Appends the units of word `w` (position `k` in reading order; the next word starts at
    /// `next_start`, ms) to `units`. A word with no visible text adds none.
    ///
    /// Inlined into the layout's loop over the words: as a call per word, saving and restoring
    /// registers and reloading the preparer's state was a tenth of its instructions.
    #[inline(always)]
    pub fn push(
        &mut self,
        k: u32,
        w: &Word,
        next_start: Option<i64>,
        units: &mut Vec<Unit>,
        arena: &mut String,
    ) {
        let start = w.start.0.max(0);
        let mut end = w.end.0.max(start);
        if let Some(ns) = next_start {
            // Overlaps are trimmed: a word ends no later than the next one starts.
            end = end.min(ns.max(start));
        }
        let bytes = w.text.as_bytes();
        let trimmed = match (bytes.first(), bytes.last()) {
            // Most words need no trimming: they start and end with a visible ASCII character.
            (Some(a), Some(z)) if a.is_ascii_graphic() && z.is_ascii_graphic() => &*w.text,
            _ => w.text.trim(),
        };
        // Printable ASCII (spaces included) has nothing to clean and one grapheme per byte; most
        // words are.
        // Every byte read, without an exit per byte (most words are printable ASCII).
        let mut printable = trimmed
            .bytes()
            .fold(true, |all, b| all & (b.wrapping_sub(0x20) < 0x5f));
        let mut text: Cow<str> = Cow::Borrowed(trimmed);
        if !printable {
            if let Some(c) = clean(&text) {
                text = Cow::Owned(c);
            }
        }
        if text.is_empty() {
            return;
        }
        let speaker_change = self.prev_speaker.is_some_and(|s| s != w.speaker);
        if self.opts.capitalise && (self.sentence_start || speaker_change) {
            if let Some(c) = capitalise(&text) {
                text = Cow::Owned(c);
            }
        }
        // Sentence ends are read from the recognised text, before any replacement.
        let (mut flags, mut extra) = punctuation_flags(&text);
        if let Some(f) = self.opts.forbid {
            if let Some(r) = f.apply(&text) {
                text = Cow::Owned(clean(&r).unwrap_or(r).trim().to_string());
                printable = false;
            }
        }
        if text.is_empty() {
            return;
        }
        self.sentence_start = flags & SENT_END != 0;
        if is_weak(&text, printable) {
            flags |= WEAK;
        }
        // A sentence seldom ends in an article or a conjunction: a pause after one is a
        // hesitation.
        if let (Some(t), Some(ns)) = (self.opts.pause_end, next_start) {
            if (ns - end >= t) & (flags & WEAK == 0) {
                flags |= SENT_END;
                extra |= PAUSE_END;
            }
        }
        match w.break_after {
            Some(Break::Line) => flags |= LINE_AFTER,
            Some(Break::Cue) => flags |= CUE_AFTER,
            Some(Break::Timed) => {
                flags |= CUE_AFTER;
                extra |= TIMED;
            }
            Some(Break::Join) => extra |= JOIN,
            None => {}
        }
        let (lo, hi, owned) = match &text {
            Cow::Borrowed(b) => {
                let lo = b.as_ptr() as usize - w.text.as_ptr() as usize;
                (lo, lo + b.len(), false)
            }
            Cow::Owned(o) => {
                let lo = arena.len();
                arena.push_str(o);
                (lo, arena.len(), true)
            }
        };
        if hi > u32::MAX as usize {
            return;
        }
        let first_char = text.chars().next();
        let sep = match (self.prev_last_char, first_char) {
            (Some(a), Some(b)) => !(is_cjk(a) && is_cjk(b)),
            _ => true,
        };
        self.prev_last_char = text.chars().next_back();
        self.prev_speaker = Some(w.speaker);
        // Capitalising printable ASCII keeps it printable ASCII.
        let (g, width) = if printable {
            (text.len() as u32, text.len() as u32)
        } else {
            measure(&text)
        };
        let base_flags = if owned { IN_ARENA } else { 0 };
        let chunk = self.opts.chunk;
        if g <= chunk {
            units.push(Unit {
                word: k,
                lo: lo as u32,
                hi: hi as u32,
                g,
                w: width,
                sep,
                start,
                end,
                speaker: w.speaker,
                flags: flags | base_flags | FIRST_PIECE,
                extra,
            });
            return;
        }
        // An over-long word: pieces of `chunk` graphemes, never cutting a cluster; its time is
        // shared out in proportion to the graphemes.
        let dur = end - start;
        let total = g as i64;
        let mut piece_start_byte = 0usize;
        let mut count = 0u32;
        let mut done = 0i64;
        let mut first = true;
        let mut iter = text.grapheme_indices(true).peekable();
        while iter.next().is_some() {
            count += 1;
            let end_byte = match iter.peek() {
                Some(&(b, _)) => b,
                None => text.len(),
            };
            let last = iter.peek().is_none();
            if count == chunk || last {
                let piece = &text[piece_start_byte..end_byte];
                let (pg, pw) = measure(piece);
                let t0 = start + dur * done / total;
                done += pg as i64;
                let t1 = start + dur * done / total;
                let mut f = base_flags;
                if first {
                    f |= FIRST_PIECE;
                }
                if last {
                    f |= flags;
                } else {
                    f |= MID_WORD;
                }
                units.push(Unit {
                    word: k,
                    lo: (lo + piece_start_byte) as u32,
                    hi: (lo + end_byte) as u32,
                    g: pg,
                    w: pw,
                    // Pieces of one word are glued: no space between them.
                    sep: if first { sep } else { false },
                    start: t0,
                    end: t1,
                    speaker: w.speaker,
                    flags: f,
                    extra: if last { extra } else { 0 },
                });
                first = false;
                piece_start_byte = end_byte;
                count = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn weak_words_are_found_in_any_case_and_nothing_else_is() {
        let reference = |s: &str| {
            WEAK_WORDS
                .iter()
                .any(|w| w.eq_ignore_ascii_case(s.as_bytes()))
        };
        let mut tried = 0;
        for w in WEAK_WORDS {
            let w = std::str::from_utf8(w).unwrap();
            for v in [
                w.to_string(),
                w.to_uppercase(),
                format!("{w}s"),
                format!("x{w}"),
                w[1..].to_string(),
                format!("{w}\0"),
                format!("{w}."),
            ] {
                assert_eq!(is_weak(&v, false), reference(&v), "{v:?}");
                if v.is_ascii() {
                    assert_eq!(is_weak(&v, true), reference(&v), "{v:?}");
                }
                tried += 1;
            }
        }
        for v in [
            "", "A", "The", "BECAUSE", "becausee", "é", "der", "Der", "\0\0",
        ] {
            assert_eq!(is_weak(v, false), reference(v), "{v:?}");
        }
        assert!(tried > 400 && is_weak("The", true) && !is_weak("theory", true));
    }

    #[test]
    fn weak_word_lookup_reads_one_slot() {
        // When the word list changes, pick a new `WEAK_MUL`: odd random numbers until this holds
        // (a few thousand tries for 67 words in 256 slots).
        assert_eq!(WEAK_PROBES, 1);
    }
    use super::*;

    #[test]
    fn capitalises_after_leading_punctuation_only_single_char_capitals() {
        assert_eq!(capitalise("¿qué?").as_deref(), Some("¿Qué?"));
        assert_eq!(capitalise("ßtraße"), None);
        assert_eq!(capitalise("Hello"), None);
        assert_eq!(capitalise("123"), None);
    }

    #[test]
    fn sentence_ends_are_seen_through_closing_quotes() {
        assert_eq!(punctuation_flags("it.\"").0, SENT_END);
        assert_eq!(punctuation_flags("好。").0, SENT_END);
        assert_eq!(punctuation_flags("well,").0, CLAUSE);
        assert_eq!(punctuation_flags("well").0, 0);
    }

    #[test]
    fn the_last_byte_shortcut_gives_what_the_punctuation_rules_give() {
        let by_the_rules = |s: &str| match strip_closers(s).chars().next_back() {
            Some('.' | '?' | '!' | '。' | '？' | '！' | '‽') => (SENT_END, 0),
            Some(',' | ';' | '，' | '；' | '、') => (CLAUSE, COMMA),
            Some(':' | '：' | '—' | '–' | '…') => (CLAUSE, 0),
            _ => (0, 0),
        };
        let ends = (0u8..0x80)
            .map(char::from)
            .chain(['»', '”', '。', '、', '—', '…', 'é']);
        for end in ends {
            for word in [
                format!("word{end}"),
                format!("word.{end}"),
                format!("x,{end}\""),
            ] {
                assert_eq!(punctuation_flags(&word), by_the_rules(&word), "{word:?}");
            }
        }
    }

    #[test]
    fn common_scripts_fast_path_agrees_with_the_segmenter() {
        for s in [
            "café",
            "naïve",
            "東京の駅",
            "שלום",
            "مرحبا",
            "Zürich",
            "ĳsje",
            "한국어",
            "Ωμέγα",
        ] {
            let slow = (
                s.graphemes(true).count() as u32,
                UnicodeWidthStr::width(s) as u32,
            );
            assert_eq!(measure_common(s), Some(slow), "{s}");
        }
        assert_eq!(measure_common("e\u{301}"), None);
        assert_eq!(measure_common("👍"), None);
    }

    #[test]
    fn measures_graphemes_not_bytes() {
        assert_eq!(measure("abc"), (3, 3));
        assert_eq!(measure("e\u{301}"), (1, 1));
        assert_eq!(measure("👩‍👩‍👧"), (1, 2));
        assert_eq!(measure("日本"), (2, 4));
        assert_eq!(measure("a\r\nb").0, 3);
    }
}
