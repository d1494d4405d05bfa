//! Character tables of EBU-STL: ISO 6937 (code table 00 of the text field) both ways, and the DOS
//! code pages 850 and 437 of the GSI block's text fields.
//!
//! ISO 6937 is a two-byte-for-accents encoding: a non-spacing diacritic byte (C1h–CFh) comes
//! *before* its base letter. Only the letter/diacritic pairs of the standard's repertoire (the table
//! in formats.md §5, which matches ttconv's decoder) are produced, so every byte we write decodes to
//! the same letter in every reader; anything else becomes `?`.

use std::borrow::Cow;
use std::sync::OnceLock;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

/// The character written for anything the target table cannot encode.
pub(crate) const REPLACEMENT: u8 = b'?';

/// Diacritic byte, the base letters it combines with, and the precomposed letters they make (same
/// order, one char each). The spacing form of each accent (the diacritic followed by 20h) is listed
/// separately in [`SPACING_ACCENTS`].
const PAIRS: [(u8, &str, &str); 13] = [
    (0xC1, "AEIOUaeiou", "ÀÈÌÒÙàèìòù"),
    (
        0xC2,
        "ACEILNORSUYZacegilnorsuyz",
        "ÁĆÉÍĹŃÓŔŚÚÝŹáćéģíĺńóŕśúýź",
    ),
    (0xC3, "ACEGHIJOSUWYaceghijosuwy", "ÂĈÊĜĤÎĴÔŜÛŴŶâĉêĝĥîĵôŝûŵŷ"),
    (0xC4, "AINOUainou", "ÃĨÑÕŨãĩñõũ"),
    (0xC5, "AEIOUaeiou", "ĀĒĪŌŪāēīōū"),
    (0xC6, "AGUagu", "ĂĞŬăğŭ"),
    (0xC7, "CEGIZcegz", "ĊĖĠİŻċėġż"),
    (0xC8, "AEIOUYaeiouy", "ÄËÏÖÜŸäëïöüÿ"),
    (0xCA, "AUau", "ÅŮåů"),
    (0xCB, "CGKLNRSTcklnrst", "ÇĢĶĻŅŖŞŢçķļņŗşţ"),
    (0xCD, "OUou", "ŐŰőű"),
    (0xCE, "AEIUaeiu", "ĄĘĮŲąęįų"),
    (0xCF, "CDELNRSTZcdelnrstz", "ČĎĚĽŇŘŠŤŽčďěľňřšťž"),
];

/// The spacing forms of the accents: the diacritic byte followed by a space.
const SPACING_ACCENTS: [(u8, char); 10] = [
    (0xC2, '´'),
    (0xC5, '¯'),
    (0xC6, '˘'),
    (0xC7, '˙'),
    (0xC8, '¨'),
    (0xCA, '˚'),
    (0xCB, '¸'),
    (0xCD, '˝'),
    (0xCE, '˛'),
    (0xCF, 'ˇ'),
];

/// Single bytes A0h–FFh; `\0` marks a diacritic or an unassigned position.
const HIGH: [char; 96] = [
    // A0
    '\u{A0}', '¡', '¢', '£', '$', '¥', '#', '§', '¤', '‘', '“', '«', '←', '↑', '→', '↓',
    // B0
    '°', '±', '²', '³', '×', 'µ', '¶', '·', '÷', '’', '”', '»', '¼', '½', '¾', '¿',
    // C0: the diacritics (C0h itself is unassigned)
    '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0', '\0',
    // D0: D0h is the dash; ttconv reads it as U+2014, the speaker dash we write.
    '—', '¹', '®', '©', '™', '♪', '¬', '¦', '\0', '\0', '\0', '\0', '⅛', '⅜', '⅝', '⅞',
    // E0
    'Ω', 'Æ', 'Ð', 'ª', 'Ħ', '\0', 'Ĳ', 'Ŀ', 'Ł', 'Ø', 'Œ', 'º', 'Þ', 'Ŧ', 'Ŋ', 'ŉ', // F0
    'ĸ', 'æ', 'đ', 'ð', 'ħ', 'ı', 'ĳ', 'ŀ', 'ł', 'ø', 'œ', 'ß', 'þ', 'ŧ', 'ŋ', '\u{AD}',
];

/// True for the non-spacing diacritic bytes C1h–CFh (C9h and CCh are reserved but still take a
/// following letter, so a reader must consume both bytes).
pub(crate) fn is_diacritic(byte: u8) -> bool {
    (0xC1..=0xCF).contains(&byte)
}

/// The character of a diacritic byte followed by `base`, if the pair is in the repertoire.
pub(crate) fn compose(diacritic: u8, base: u8) -> Option<char> {
    if base == b' ' {
        return SPACING_ACCENTS
            .iter()
            .find(|(d, _)| *d == diacritic)
            .map(|(_, c)| *c);
    }
    let (_, bases, composed) = PAIRS.iter().find(|(d, _, _)| *d == diacritic)?;
    let i = bases.bytes().position(|b| b == base)?;
    composed.chars().nth(i)
}

/// The character of a single byte of code table 00 (not a diacritic), if assigned.
pub(crate) fn decode_single(byte: u8) -> Option<char> {
    match byte {
        0x20..=0x7E => Some(byte as char),
        0xA0..=0xFF => match HIGH[usize::from(byte - 0xA0)] {
            '\0' => None,
            c => Some(c),
        },
        _ => None,
    }
}

/// Every non-ASCII character code table 00 can show, with its one or two bytes (second byte 0
/// for single-byte codes), sorted by character for binary search. Built once.
fn encode_table() -> &'static [(char, [u8; 2])] {
    static TABLE: OnceLock<Vec<(char, [u8; 2])>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Vec<(char, [u8; 2])> = Vec::with_capacity(256);
        for (i, c) in HIGH.iter().enumerate() {
            // `$` and `#` are written as ASCII; the table's A4h/A6h duplicates are never used.
            if *c != '\0' && *c != '$' && *c != '#' {
                t.push((*c, [0xA0 + i as u8, 0]));
            }
        }
        for (d, bases, composed) in PAIRS {
            for (b, c) in bases.bytes().zip(composed.chars()) {
                t.push((c, [d, b]));
            }
        }
        for (d, c) in SPACING_ACCENTS {
            t.push((c, [d, b' ']));
        }
        // Typographic equivalents that the table spells with one code: the horizontal bar shares
        // the dash code, Đ shares Ð's, and Romanian comma-below letters are shown with the
        // cedilla that teletext has.
        for (alias, target) in [
            ('\u{2015}', '—'),
            ('Đ', 'Ð'),
            ('Ș', 'Ş'),
            ('ș', 'ş'),
            ('Ț', 'Ţ'),
            ('ț', 'ţ'),
        ] {
            if let Some(&(_, bytes)) = t.iter().find(|(c, _)| *c == target) {
                t.push((alias, bytes));
            }
        }
        t.sort_by_key(|(c, _)| *c);
        t.dedup_by_key(|(c, _)| *c);
        t
    })
}

/// Appends the ISO 6937 bytes of one character (already NFC); `false` (and `?` written) when
/// the table has none.
fn encode_char(c: char, out: &mut Vec<u8>) -> bool {
    if (' '..='~').contains(&c) {
        out.push(c as u8);
        return true;
    }
    if c == '\t' {
        out.push(b' ');
        return true;
    }
    let table = encode_table();
    match table.binary_search_by_key(&c, |(k, _)| *k) {
        Ok(i) => {
            let [a, b] = table[i].1;
            out.push(a);
            if b != 0 {
                out.push(b);
            }
            true
        }
        Err(_) => {
            out.push(REPLACEMENT);
            false
        }
    }
}

/// Appends `text` in ISO 6937 after NFC normalisation; unencodable characters become `?`, one
/// per grapheme cluster (an emoji sequence or a letter with marks no precomposed form covers is
/// one character on screen).
pub(crate) fn encode(text: &str, out: &mut Vec<u8>) {
    // Printable ASCII, most lines: a branch-free fold the compiler vectorises.
    let printable = text
        .bytes()
        .fold(true, |all, b| all & (b.wrapping_sub(0x20) < 0x5F));
    if printable {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    // Characters below U+0300 (lead bytes below CCh) are always NFC.
    let below_combining = text.bytes().fold(true, |all, b| all & (b < 0xCC));
    let nfc: Cow<str> = if below_combining || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    };
    // Character by character first, printable ASCII runs copied whole; only text with
    // something unencodable needs the (slower) grapheme segmentation.
    let mark = out.len();
    let bytes = nfc.as_bytes();
    let mut i = 0;
    let mut clean = true;
    while i < bytes.len() {
        let run = i;
        while i < bytes.len() && (0x20..0x7F).contains(&bytes[i]) {
            i += 1;
        }
        out.extend_from_slice(&bytes[run..i]);
        if let Some(c) = nfc.get(i..).and_then(|rest| rest.chars().next()) {
            clean &= encode_char(c, out);
            i += c.len_utf8();
        }
    }
    if clean {
        return;
    }
    out.truncate(mark);
    for grapheme in nfc.graphemes(true) {
        let start = out.len();
        if !grapheme.chars().all(|c| encode_char(c, out)) {
            out.truncate(start);
            out.push(REPLACEMENT);
        }
    }
}

/// The DOS code pages a GSI block may name in CPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodePage {
    /// 850, multilingual Latin 1: what we write.
    Cp850,
    /// 437, the original IBM PC set.
    Cp437,
}

/// Bytes 80h–FFh of code page 850.
const CP850_HIGH: &str = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜø£Ø×ƒáíóúñÑªº¿®¬½¼¡«»░▒▓│┤ÁÂÀ©╣║╗╝¢¥┐\
└┴┬├─┼ãÃ╚╔╩╦╠═╬¤ðÐÊËÈıÍÎÏ┘┌█▄¦Ì▀ÓßÔÒõÕµþÞÚÛÙýÝ¯´\u{AD}±‗¾¶§÷¸°¨·¹³²■\u{A0}";

/// Bytes 80h–FFh of code page 437.
const CP437_HIGH: &str = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐\
└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u{A0}";

impl CodePage {
    fn high(self) -> &'static str {
        match self {
            CodePage::Cp850 => CP850_HIGH,
            CodePage::Cp437 => CP437_HIGH,
        }
    }

    /// Decodes GSI text; control bytes become `?`.
    pub(crate) fn decode(self, bytes: &[u8]) -> String {
        bytes
            .iter()
            .map(|&b| match b {
                0x20..=0x7E => b as char,
                0x80..=0xFF => self
                    .high()
                    .chars()
                    .nth(usize::from(b - 0x80))
                    .unwrap_or('?'),
                _ => '?',
            })
            .collect()
    }

    /// Encodes `text` (NFC) into at most `max` bytes; a character (grapheme cluster) the page
    /// lacks becomes one `?`.
    pub(crate) fn encode(self, text: &str, max: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(max);
        let text: String = text.nfc().collect();
        for grapheme in text.graphemes(true) {
            if out.len() == max {
                break;
            }
            let mut chars = grapheme.chars();
            let b = match (chars.next(), chars.next()) {
                (Some(c), None) if (' '..='~').contains(&c) => c as u8,
                (Some(c), None) => self
                    .high()
                    .chars()
                    .position(|h| h == c)
                    .map_or(REPLACEMENT, |i| 0x80 + i as u8),
                _ => REPLACEMENT,
            };
            out.push(b);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode(s, &mut out);
        out
    }

    #[test]
    fn tables_have_one_letter_per_base() {
        for (d, bases, composed) in PAIRS {
            assert_eq!(bases.chars().count(), composed.chars().count(), "{d:X}");
        }
        assert_eq!(CP850_HIGH.chars().count(), 128);
        assert_eq!(CP437_HIGH.chars().count(), 128);
    }

    #[test]
    fn accents_come_before_the_letter() {
        assert_eq!(enc("é"), [0xC2, b'e']);
        assert_eq!(enc("Ä"), [0xC8, b'A']);
        assert_eq!(enc("ñ"), [0xC4, b'n']);
        assert_eq!(enc("ç"), [0xCB, b'c']);
        assert_eq!(enc("š"), [0xCF, b's']);
        assert_eq!(enc("ģ"), [0xC2, b'g']);
        assert_eq!(enc("İ"), [0xC7, b'I']);
    }

    #[test]
    fn decomposed_input_is_normalised_first() {
        assert_eq!(enc("e\u{301}"), [0xC2, b'e']);
    }

    #[test]
    fn unencodable_characters_become_question_marks() {
        assert_eq!(enc("€漢😀"), b"???");
        assert_eq!(enc("a👨‍👩‍👧‍👦b 🇫🇷 ✔️"), b"a?b ? ?");
        assert_eq!(enc("ḿ"), b"?");
    }

    #[test]
    fn every_pair_decodes_to_the_letter_it_encodes() {
        for (d, bases, composed) in PAIRS {
            for (b, c) in bases.bytes().zip(composed.chars()) {
                assert_eq!(compose(d, b), Some(c));
                assert_eq!(enc(&c.to_string()), [d, b]);
            }
        }
        for (i, c) in HIGH.iter().enumerate() {
            if *c != '\0' && *c != '$' && *c != '#' {
                assert_eq!(enc(&c.to_string()), [0xA0 + i as u8], "{c}");
            }
        }
    }

    #[test]
    fn code_pages_round_trip_their_repertoire() {
        let title = "Café Ørsted ½";
        let bytes = CodePage::Cp850.encode(title, 32);
        assert_eq!(bytes, b"Caf\x82 \x9Drsted \xAB");
        assert_eq!(CodePage::Cp850.decode(&bytes), title);
        assert_eq!(CodePage::Cp437.decode(b"\x9B"), "¢");
        assert_eq!(CodePage::Cp850.encode("€ 👍🏽", 32), b"? ?");
        assert_eq!(CodePage::Cp850.encode(&"a".repeat(40), 32).len(), 32);
    }
}
