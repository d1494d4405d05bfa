//! EBU-STL (EBU Tech 3264): a byte-exact teletext writer and a reader for the files other tools
//! write.
//!
//! The writer emits one 1024-byte GSI block and one 128-byte TTI block per cue (more when the text
//! needs extension blocks): teletext level 1, code table 00 (ISO 6937), double-height lines at the
//! bottom of the screen, centred. Times are frames of the DFC's nominal rate; `offset` is ignored,
//! as the contract says for EBU-STL. The reader accepts space-padded or blank GSI numbers, code
//! tables 00–04, user-data and comment blocks, extension blocks, and teletext or open-subtitle
//! text fields.

use std::io::Write;

use byteorder::{ByteOrder, LittleEndian};
use cuecraft_engine::{Cue, FrameRate, Millis};
use unicode_normalization::UnicodeNormalization;

use crate::iso6937::{self, CodePage};
use crate::{Format, ParseError, WriteError, WriteOptions};

/// Size of the General Subtitle Information block.
pub const GSI_LEN: usize = 1024;
/// Size of a Text and Timing Information block.
pub const TTI_LEN: usize = 128;
/// Size of a TTI text field.
const TF_LEN: usize = 112;
/// Extension blocks are numbered 00h–EFh, so a subtitle has at most 240 blocks.
const MAX_BLOCKS_PER_SUBTITLE: usize = 0xF0;

/// The creation and revision date [`write`] puts in CD and RD: `000101` (1 January 2000).
///
/// A fixed value keeps the writer deterministic (identical cues and options give identical
/// bytes, so the API and the editor download the same file); [`write_with_date`] takes a real one.
pub const DEFAULT_DATE: (u16, u8, u8) = (2000, 1, 1);

/// Writes `cues` as an EBU-STL teletext file to `out`, with CD and RD set to [`DEFAULT_DATE`].
pub fn write(cues: &[Cue], opts: &WriteOptions, out: &mut dyn Write) -> Result<(), WriteError> {
    write_with_date(cues, opts, DEFAULT_DATE, out)
}

/// Writes `cues` like [`write`], with `date` (year, month, day) as creation and revision date.
///
/// Only the last two digits of the year are stored (`YYMMDD`); out-of-range months and days are
/// written as given, modulo 100.
pub fn write_with_date(
    cues: &[Cue],
    opts: &WriteOptions,
    date: (u16, u8, u8),
    out: &mut dyn Write,
) -> Result<(), WriteError> {
    let (cues, opts) = (crate::controls::cues(cues), crate::controls::options(opts));
    let (cues, opts): (&[Cue], &WriteOptions) = (&cues, &opts);
    let fps = stl_fps(opts.frame_rate);
    let mut order = start_order(cues, |c| cue_frames(c, fps));
    // TCI hours are one binary byte: a cue that starts at 256 hours or later has no timecode.
    order.retain(|c| frames(c.start, fps) < last_frame(fps));

    // Encode every cue's text field first (into one buffer): TNB, the block count, goes in the
    // GSI block.
    let mut fields: Vec<u8> = Vec::with_capacity(order.len() * 80);
    let mut ends: Vec<usize> = Vec::with_capacity(order.len());
    let mut points: Vec<usize> = Vec::new();
    let mut blocks = 0usize;
    for cue in &order {
        let from = fields.len();
        text_field(cue, &mut fields);
        split_points(&fields[from..], &mut points);
        blocks += points.len();
        ends.push(fields.len());
    }

    let first = order.first().map(|c| timecode(c.start, fps));
    let gsi = gsi_block(opts, fps, date, blocks, order.len(), first);
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024 + GSI_LEN);
    buf.extend_from_slice(&gsi);

    let mut field_start = 0;
    for (i, (cue, &field_end)) in order.iter().zip(&ends).enumerate() {
        let tf = &fields[field_start..field_end];
        field_start = field_end;
        // SN counts from 1 (cue numbers as SRT shows them) and wraps past 65535, the field's range.
        let sn = ((i + 1) % 0x1_0000) as u16;
        let (tci, tco) = cue_timecodes(cue, fps);
        let lines = visible_lines(cue).count();
        let vp = (24usize.saturating_sub(2 * lines.max(1))).max(1) as u8;
        split_points(tf, &mut points);
        let last = points.len() - 1;
        let mut from = 0;
        for (n, &to) in points.iter().enumerate() {
            let mut block = [0x8Fu8; TTI_LEN];
            block[0] = 0; // SGN
            LittleEndian::write_u16(&mut block[1..3], sn);
            block[3] = if n == last { 0xFF } else { n as u8 };
            block[4] = 0; // CS: not cumulative
            block[5..9].copy_from_slice(&tci);
            block[9..13].copy_from_slice(&tco);
            block[13] = vp;
            block[14] = 0x02; // JC: centred
            block[15] = 0x00; // CF: subtitle data
            block[16..16 + (to - from)].copy_from_slice(&tf[from..to]);
            buf.extend_from_slice(&block);
            from = to;
        }
        if buf.len() >= 64 * 1024 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    Ok(())
}

/// The cues a writer emits, in the order of `key`, the (start, end) the file will hold (stable):
/// ordering by the exact times instead would let two cues that tie once written (same frame, or
/// clamped to zero) come out in an order that reading back and writing again changes. Cues with no
/// visible text are left out, as every reader would drop them anyway.
pub(crate) fn start_order<K: Ord>(cues: &[Cue], key: impl Fn(&Cue) -> K) -> Vec<&Cue> {
    let mut order: Vec<&Cue> = cues
        .iter()
        .filter(|c| visible_lines(c).next().is_some())
        .collect();
    if !order.windows(2).all(|w| key(w[0]) <= key(w[1])) {
        order.sort_by_key(|c| key(c));
    }
    order
}

/// The lines a cue displays: its lines split at embedded CR/LF, blank ones left out.
pub(crate) fn visible_lines(cue: &Cue) -> impl Iterator<Item = &str> + Clone {
    cue.lines
        .iter()
        .flat_map(|l| LineParts { rest: Some(l) })
        .filter(|l| !is_blank(l))
}

/// True when any byte is below 20h (CR, LF, tab, other controls), eight bytes at a time: most
/// lines have none, and this check runs for every line the writers emit.
pub(crate) fn has_control_byte(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // Sets the top bit of every byte below 20h (bytes of 80h and above are masked by `!x`).
        if x.wrapping_sub(0x2020_2020_2020_2020) & !x & 0x8080_8080_8080_8080 != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| b < 0x20)
}

/// True for a line with nothing visible (Unicode whitespace only); the common case, a line that
/// starts with a printable ASCII character, is decided on its first byte.
fn is_blank(line: &str) -> bool {
    match line.as_bytes().first() {
        Some(&b) if b > b' ' && b < 0x7F => false,
        _ => line.trim().is_empty(),
    }
}

/// `text` without the given ASCII bytes at either end (a byte loop: a `char` pattern costs more).
pub(crate) fn trim_ascii_set<'a>(text: &'a str, set: &[u8]) -> &'a str {
    let bytes = text.as_bytes();
    let start = bytes
        .iter()
        .position(|b| !set.contains(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !set.contains(b))
        .map_or(start, |e| e + 1);
    // Both ends sit next to ASCII bytes (or the text's ends), so they are char boundaries.
    text.get(start..end.max(start)).unwrap_or("")
}

/// The parts of a line between CR and LF bytes (a byte search: both are ASCII, so every part
/// is still valid UTF-8).
#[derive(Clone)]
struct LineParts<'a> {
    rest: Option<&'a str>,
}

impl<'a> Iterator for LineParts<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        if !has_control_byte(rest.as_bytes()) {
            self.rest = None;
            return Some(rest);
        }
        match rest.bytes().position(|b| b == b'\r' || b == b'\n') {
            Some(i) => {
                self.rest = rest.get(i + 1..);
                rest.get(..i)
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// The DFC's nominal rate: 30 for 30000/1001, 30/1 and 60/1; 25 for everything else (25/1,
/// 50/1, audio-only, and 24000/1001 and 24/1, which have no DFC of their own in Tech 3264).
fn stl_fps(rate: FrameRate) -> u32 {
    if rate.nominal() == 30 || rate.nominal() == 60 {
        30
    } else {
        25
    }
}

/// Whole frames of `fps` in `t`, rounded half up (negative times clamp to 0).
fn frames(t: Millis, fps: u32) -> u64 {
    let ms = t.0.max(0) as u64;
    match ms.checked_mul(u64::from(fps) * 2) {
        Some(twice) => twice / 2000 + u64::from(twice % 2000 >= 1000),
        // Beyond 2^57 ms: far past the 256-hour limit, any large value does.
        None => u64::MAX / 2,
    }
}

/// The frame number of 255:59:59 and the last frame: TCI/TCO hours are one binary byte.
fn last_frame(fps: u32) -> u64 {
    256 * 3600 * u64::from(fps) - 1
}

/// TCI/TCO bytes hh mm ss ff for a frame count. Hours are binary, so up to 255 fit (design
/// decision: Tech 3264 only shows 00–23, but readers take the byte as it is); later times clamp
/// to 255:59:59 and the last frame, and [`write`] leaves out cues that start there.
fn split_frames(total: u64, fps: u32) -> [u8; 4] {
    let total = total.min(last_frame(fps));
    let fps = u64::from(fps);
    let secs = total / fps;
    [
        (secs / 3600) as u8,
        (secs / 60 % 60) as u8,
        (secs % 60) as u8,
        (total % fps) as u8,
    ]
}

fn timecode(t: Millis, fps: u32) -> [u8; 4] {
    split_frames(frames(t, fps), fps)
}

/// The frames of a cue's TCI and TCO as written: TCO at least one frame after TCI (readers drop
/// empty subtitles), both clamped to the last frame a timecode holds.
fn cue_frames(cue: &Cue, fps: u32) -> (u64, u64) {
    let start = frames(cue.start, fps);
    let end = frames(cue.end, fps).max(start + 1);
    let last = last_frame(fps);
    (start.min(last), end.min(last))
}

/// TCI and TCO of a cue (see [`cue_frames`]).
fn cue_timecodes(cue: &Cue, fps: u32) -> ([u8; 4], [u8; 4]) {
    let (start, end) = cue_frames(cue, fps);
    (split_frames(start, fps), split_frames(end, fps))
}

/// The teletext text field: `0D 0B 0B` line `0A 0A`, lines separated by `8A 8A` (double height
/// takes two rows). Lines are trimmed: centred teletext has no use for edge spaces.
fn text_field(cue: &Cue, tf: &mut Vec<u8>) {
    for (i, line) in visible_lines(cue).enumerate() {
        if i > 0 {
            tf.extend_from_slice(&[0x8A, 0x8A]);
        }
        tf.extend_from_slice(&[0x0D, 0x0B, 0x0B]);
        iso6937::encode(trim_ascii_set(line, b" \t"), tf);
        tf.extend_from_slice(&[0x0A, 0x0A]);
    }
}

/// End offsets of the TTI blocks a text field needs: at most 112 bytes each, never splitting a
/// diacritic from its letter, at most 240 blocks (text beyond 26,880 bytes is dropped). Always at
/// least one block.
fn split_points(tf: &[u8], points: &mut Vec<usize>) {
    points.clear();
    if tf.len() <= TF_LEN {
        points.push(tf.len());
        return;
    }
    let mut start = 0;
    let mut i = 0;
    while i < tf.len() && points.len() < MAX_BLOCKS_PER_SUBTITLE {
        let unit = if iso6937::is_diacritic(tf[i]) { 2 } else { 1 };
        if i + unit - start > TF_LEN {
            points.push(i);
            start = i;
        }
        i += unit;
    }
    if points.len() < MAX_BLOCKS_PER_SUBTITLE {
        points.push(tf.len().min(i));
    }
}

/// Writes `value` as zero-padded ASCII digits into `field`, capped at the largest value it holds.
fn put_number(field: &mut [u8], value: u64) {
    let max = 10u64.saturating_pow(field.len() as u32) - 1;
    let mut v = value.min(max);
    for b in field.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

fn gsi_block(
    opts: &WriteOptions,
    fps: u32,
    date: (u16, u8, u8),
    blocks: usize,
    subtitles: usize,
    first: Option<[u8; 4]>,
) -> [u8; GSI_LEN] {
    let mut g = [b' '; GSI_LEN];
    g[0..3].copy_from_slice(b"850");
    g[3..11].copy_from_slice(if fps == 30 { b"STL30.01" } else { b"STL25.01" });
    g[11] = b'1'; // DSC: teletext level 1
    g[12..14].copy_from_slice(b"00"); // CCT: ISO 6937
    g[14..16].copy_from_slice(&language_code(&opts.language));
    // OPT is one line of 32 characters: line breaks and runs of whitespace become one space.
    let title = opts.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = CodePage::Cp850.encode(&title, 32);
    g[16..16 + title.len()].copy_from_slice(&title);
    let (y, m, d) = date;
    let mut ymd = [0u8; 6];
    put_number(&mut ymd[0..2], u64::from(y % 100));
    put_number(&mut ymd[2..4], u64::from(m % 100));
    put_number(&mut ymd[4..6], u64::from(d % 100));
    g[224..230].copy_from_slice(&ymd); // CD
    g[230..236].copy_from_slice(&ymd); // RD
    g[236..238].copy_from_slice(b"01"); // RN
    put_number(&mut g[238..243], blocks as u64); // TNB
    put_number(&mut g[243..248], subtitles as u64); // TNS
    g[248..251].copy_from_slice(b"001"); // TNG
    put_number(&mut g[251..253], u64::from(opts.max_chars_per_line.min(40))); // MNC
    g[253..255].copy_from_slice(b"23"); // MNR
    g[255] = b'1'; // TCS
    g[256..264].copy_from_slice(b"00000000"); // TCP
                                              // TCF: the first TCI as HHMMSSFF; two hour digits only, so a first cue past 99 h clamps.
    let tcf = match first {
        Some([h, m, s, f]) if h < 100 => [h, m, s, f],
        Some(_) => [99, 59, 59, (fps - 1) as u8],
        None => [0, 0, 0, 0],
    };
    for (i, v) in tcf.iter().enumerate() {
        put_number(&mut g[264 + 2 * i..266 + 2 * i], u64::from(*v));
    }
    g[272] = b'1'; // TND
    g[273] = b'1'; // DSN
    g
}

/// ISO 639-1 (and a few 639-2/3) codes to the EBU Tech 3264 language codes, in the table's order.
/// `nl-BE` (Flemish) gets 2Ah; everything else goes by its primary subtag.
const LANGUAGES: [(&str, &[u8; 2]); 76] = [
    ("sq", b"01"),
    ("br", b"02"),
    ("ca", b"03"),
    ("hr", b"04"),
    ("cy", b"05"),
    ("cs", b"06"),
    ("da", b"07"),
    ("de", b"08"),
    ("en", b"09"),
    ("es", b"0A"),
    ("eo", b"0B"),
    ("et", b"0C"),
    ("eu", b"0D"),
    ("fo", b"0E"),
    ("fr", b"0F"),
    ("fy", b"10"),
    ("ga", b"11"),
    ("gd", b"12"),
    ("gl", b"13"),
    ("is", b"14"),
    ("it", b"15"),
    ("se", b"16"),
    ("la", b"17"),
    ("lv", b"18"),
    ("lb", b"19"),
    ("lt", b"1A"),
    ("hu", b"1B"),
    ("mt", b"1C"),
    ("nl", b"1D"),
    ("no", b"1E"),
    ("oc", b"1F"),
    ("pl", b"20"),
    ("pt", b"21"),
    ("ro", b"22"),
    ("rm", b"23"),
    ("sr", b"24"),
    ("sk", b"25"),
    ("sl", b"26"),
    ("fi", b"27"),
    ("sv", b"28"),
    ("tr", b"29"),
    ("wa", b"2B"),
    ("zu", b"45"),
    ("vi", b"46"),
    ("uz", b"47"),
    ("ur", b"48"),
    ("uk", b"49"),
    ("th", b"4A"),
    ("te", b"4B"),
    ("tt", b"4C"),
    ("ta", b"4D"),
    ("tg", b"4E"),
    ("sw", b"4F"),
    ("so", b"51"),
    ("si", b"52"),
    ("sn", b"53"),
    ("sh", b"54"),
    ("ru", b"56"),
    ("qu", b"57"),
    ("ps", b"58"),
    ("pa", b"59"),
    ("fa", b"5A"),
    ("or", b"5C"),
    ("ne", b"5D"),
    ("nd", b"5E"),
    ("mr", b"5F"),
    ("ms", b"61"),
    ("mg", b"62"),
    ("mk", b"63"),
    ("lo", b"64"),
    ("ko", b"65"),
    ("km", b"66"),
    ("kk", b"67"),
    ("kn", b"68"),
    ("ja", b"69"),
    ("id", b"6A"),
];

/// Codes past `id` in the table (6B–7F) and the three-letter ones.
const MORE_LANGUAGES: [(&str, &[u8; 2]); 28] = [
    ("hi", b"6B"),
    ("he", b"6C"),
    ("iw", b"6C"),
    ("ha", b"6D"),
    ("gn", b"6E"),
    ("gu", b"6F"),
    ("el", b"70"),
    ("ka", b"71"),
    ("ff", b"72"),
    ("prs", b"73"),
    ("cv", b"74"),
    ("zh", b"75"),
    ("yue", b"75"),
    ("cmn", b"75"),
    ("my", b"76"),
    ("bg", b"77"),
    ("bn", b"78"),
    ("be", b"79"),
    ("bm", b"7A"),
    ("az", b"7B"),
    ("as", b"7C"),
    ("hy", b"7D"),
    ("ar", b"7E"),
    ("am", b"7F"),
    ("nb", b"1E"),
    ("nn", b"1E"),
    ("srn", b"50"),
    ("pap", b"5B"),
];

/// The LC field for a language tag (`en`, `zh-TW`, `nl_BE`); `00` (unknown) when the table has
/// no code for it, including `auto` and `multilingual`.
pub fn language_code(tag: &str) -> [u8; 2] {
    let tag = tag.trim().to_ascii_lowercase().replace('_', "-");
    if tag == "nl-be" || tag == "vls" {
        return *b"2A";
    }
    let primary = tag.split('-').next().unwrap_or("");
    LANGUAGES
        .iter()
        .chain(MORE_LANGUAGES.iter())
        .find(|(code, _)| *code == primary)
        .map_or(*b"00", |(_, lc)| **lc)
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

fn err(offset: usize, message: impl Into<String>) -> ParseError {
    ParseError::new(Format::EbuStl, offset, message)
}

/// A text field's character set, from the GSI's CCT.
enum Charset {
    Iso6937,
    /// ISO 8859-5/6/7/8: characters of bytes A0h–FFh.
    Iso8859(Box<[char; 96]>),
}

impl Charset {
    fn from_cct(cct: &[u8]) -> Option<Charset> {
        let cct = std::str::from_utf8(cct).ok()?.trim();
        let encoding = match cct {
            "" | "00" => return Some(Charset::Iso6937),
            "01" => encoding_rs::ISO_8859_5,
            "02" => encoding_rs::ISO_8859_6,
            "03" => encoding_rs::ISO_8859_7,
            "04" => encoding_rs::ISO_8859_8,
            _ => return None,
        };
        let mut table = ['\u{FFFD}'; 96];
        for (i, slot) in table.iter_mut().enumerate() {
            let byte = [0xA0 + i as u8];
            let (text, _) = encoding.decode_without_bom_handling(&byte);
            *slot = text.chars().next().unwrap_or('\u{FFFD}');
        }
        Some(Charset::Iso8859(Box::new(table)))
    }
}

/// The GSI fields a reader needs, plus the ones tests and tools show.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gsi {
    /// CPN: the code page of the GSI text fields, as written (`850`).
    pub code_page: String,
    /// DFC, as written (`STL25.01`).
    pub disk_format: String,
    /// The nominal frame rate the DFC names (25, 30, 24, 50).
    pub fps: u32,
    /// DSC: display standard (`1` teletext level 1, `0` open, blank undefined).
    pub display_standard: String,
    /// CCT, as written (`00`).
    pub character_table: String,
    /// LC, as written (`09`).
    pub language: String,
    /// OPT, decoded with CPN's code page, trimmed.
    pub title: String,
    /// TCP, as written (`00000000`).
    pub programme_start: String,
}

/// Reads and checks the GSI block.
pub fn parse_gsi(input: &[u8]) -> Result<Gsi, ParseError> {
    let Some(gsi) = input.get(..GSI_LEN) else {
        return Err(err(
            input.len(),
            format!(
                "file is {} bytes, shorter than the 1024-byte gsi block",
                input.len()
            ),
        ));
    };
    let ascii = |from: usize, to: usize| -> String {
        gsi[from..to]
            .iter()
            .map(|&b| {
                if (0x20..0x7F).contains(&b) {
                    b as char
                } else {
                    '?'
                }
            })
            .collect::<String>()
            .trim()
            .to_string()
    };
    let disk_format = ascii(3, 11);
    let fps = match disk_format.to_ascii_uppercase().as_str() {
        "STL25.01" => 25,
        "STL30.01" => 30,
        "STL24.01" | "STL23.01" => 24,
        "STL50.01" => 50,
        _ => {
            return Err(err(
                3,
                format!("unknown disk format code (dfc) {disk_format:?}"),
            ))
        }
    };
    let character_table = ascii(12, 14);
    if Charset::from_cct(&gsi[12..14]).is_none() {
        return Err(err(
            12,
            format!("unknown character code table (cct) {character_table:?}"),
        ));
    }
    let code_page = ascii(0, 3);
    let page = if code_page == "437" {
        CodePage::Cp437
    } else {
        CodePage::Cp850
    };
    Ok(Gsi {
        disk_format,
        fps,
        display_standard: ascii(11, 12),
        character_table,
        language: ascii(14, 16),
        title: page.decode(&gsi[16..48]).trim().to_string(),
        programme_start: ascii(256, 264),
        code_page,
    })
}

/// A subtitle being assembled from its blocks.
struct Pending {
    sn: u16,
    tci: [u8; 4],
    tco: [u8; 4],
    text: Vec<u8>,
}

/// Reads cues from an EBU-STL file.
///
/// Times are TCI/TCO as written (TCP is not subtracted), at the DFC's nominal rate (STL30.01 is
/// 30 fps non-drop), rounded half up to the millisecond. User-data blocks (EBN F0h–FEh) and
/// comments (CF 01h) are skipped; extension blocks are joined by SN. Cues come back in start
/// order, numbered from 1.
pub fn parse(input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    let gsi = parse_gsi(input)?;
    let charset = Charset::from_cct(&input[12..14]).unwrap_or(Charset::Iso6937);
    let body = &input[GSI_LEN..];
    let rest = body.len() % TTI_LEN;
    if rest > 0 {
        let whole = body.len() / TTI_LEN;
        return Err(err(
            GSI_LEN + whole * TTI_LEN,
            format!(
                "truncated tti block: {} bytes left after {whole} whole blocks",
                rest
            ),
        ));
    }
    let mut cues = Vec::with_capacity(body.len() / TTI_LEN);
    let mut pending: Option<Pending> = None;
    for block in body.chunks_exact(TTI_LEN) {
        let sn = LittleEndian::read_u16(&block[1..3]);
        let ebn = block[3];
        if (0xF0..=0xFE).contains(&ebn) || block[15] == 0x01 {
            continue;
        }
        if pending.as_ref().is_some_and(|p| p.sn != sn) {
            if let Some(p) = pending.take() {
                cues.push(finish(p, &gsi, &charset));
            }
        }
        let p = pending.get_or_insert_with(|| Pending {
            sn,
            tci: [0; 4],
            tco: [0; 4],
            text: Vec::with_capacity(TF_LEN),
        });
        p.tci.copy_from_slice(&block[5..9]);
        p.tco.copy_from_slice(&block[9..13]);
        p.text.extend(block[16..].iter().filter(|&&b| b != 0x8F));
        if ebn == 0xFF {
            if let Some(p) = pending.take() {
                cues.push(finish(p, &gsi, &charset));
            }
        }
    }
    if let Some(p) = pending.take() {
        cues.push(finish(p, &gsi, &charset));
    }
    cues.sort_by_key(|c| c.start);
    for (i, cue) in cues.iter_mut().enumerate() {
        cue.index = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    Ok(cues)
}

/// Milliseconds of a binary hh mm ss ff timecode (frames above the rate are taken as they come).
fn timecode_ms(tc: [u8; 4], fps: u32) -> Millis {
    let [h, m, s, f] = tc.map(u64::from);
    let frames = ((h * 3600 + m * 60 + s) * u64::from(fps) + f) as u128;
    let fps = u128::from(fps.max(1));
    Millis(((frames * 2000 + fps) / (2 * fps)) as i64)
}

fn finish(p: Pending, gsi: &Gsi, charset: &Charset) -> Cue {
    let start = timecode_ms(p.tci, gsi.fps);
    let end = timecode_ms(p.tco, gsi.fps).max(start);
    Cue::from_lines(0, start, end, decode_text(&p.text, charset))
}

/// One decoded cell of a text field.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell {
    Char(char),
    Space,
    /// A teletext control code: shown as a space, so it separates words but adds none at edges.
    Control,
}

/// Decodes a text field into lines.
///
/// Runs of 8Ah are line breaks: in double-height text (any 0Dh) a pair makes one break, as the
/// second row of a double-height line is covered; otherwise each 8Ah is one break. A control
/// code (00h–1Fh) between two characters reads as a space and vanishes elsewhere; 80h–85h
/// (italics, underline, boxing) and reserved codes take no room.
fn decode_text(tf: &[u8], charset: &Charset) -> Vec<String> {
    if tf.is_empty() {
        return Vec::new();
    }
    let double_height = tf.contains(&0x0D);
    let mut lines: Vec<Vec<Cell>> = vec![Vec::new()];
    let mut i = 0;
    while i < tf.len() {
        let b = tf[i];
        match b {
            0x8A => {
                let mut run: usize = 0;
                while tf.get(i) == Some(&0x8A) {
                    run += 1;
                    i += 1;
                }
                let breaks = if double_height { run.div_ceil(2) } else { run };
                // Breaks after the last cell of the field add no line.
                if i < tf.len() {
                    for _ in 0..breaks {
                        lines.push(Vec::new());
                    }
                }
                continue;
            }
            0x00..=0x1F => push_cell(&mut lines, Cell::Control),
            0x20 => push_cell(&mut lines, Cell::Space),
            0x7F..=0x9F => {}
            _ => match charset {
                Charset::Iso8859(table) => {
                    let c = if b < 0x7F {
                        b as char
                    } else {
                        table[usize::from(b - 0xA0)]
                    };
                    push_cell(&mut lines, Cell::Char(c));
                }
                Charset::Iso6937 if iso6937::is_diacritic(b) => {
                    // A diacritic with no letter after it is dropped.
                    if let Some(base @ 0x20..=0x7E) = tf.get(i + 1).copied() {
                        if let Some(c) = iso6937::compose(b, base) {
                            push_cell(&mut lines, Cell::Char(c));
                        } else {
                            // A pair outside the repertoire: the letter plus the combining
                            // accent, composed below where Unicode has a precomposed form.
                            push_cell(&mut lines, Cell::Char(base as char));
                            if let Some(mark) = combining_mark(b) {
                                push_cell(&mut lines, Cell::Char(mark));
                            }
                        }
                        i += 2;
                        continue;
                    }
                }
                Charset::Iso6937 => {
                    let c = iso6937::decode_single(b).unwrap_or('\u{FFFD}');
                    push_cell(&mut lines, Cell::Char(c));
                }
            },
        }
        i += 1;
    }
    lines.iter().map(|cells| render_line(cells)).collect()
}

fn push_cell(lines: &mut [Vec<Cell>], cell: Cell) {
    if let Some(line) = lines.last_mut() {
        line.push(cell);
    }
}

fn render_line(cells: &[Cell]) -> String {
    let mut out = String::with_capacity(cells.len());
    let mut combining = false;
    for (i, cell) in cells.iter().enumerate() {
        match cell {
            Cell::Char(c) => {
                combining |= ('\u{300}'..='\u{36F}').contains(c);
                out.push(*c);
            }
            Cell::Space => out.push(' '),
            Cell::Control => {
                let before = i.checked_sub(1).and_then(|j| cells.get(j));
                let after = cells.get(i + 1);
                if matches!(before, Some(Cell::Char(_))) && matches!(after, Some(Cell::Char(_))) {
                    out.push(' ');
                }
            }
        }
    }
    let out = out.trim_matches(' ');
    if combining {
        out.nfc().collect()
    } else {
        out.to_string()
    }
}

/// The Unicode combining mark of an ISO 6937 diacritic byte.
fn combining_mark(diacritic: u8) -> Option<char> {
    Some(match diacritic {
        0xC1 => '\u{300}',
        0xC2 => '\u{301}',
        0xC3 => '\u{302}',
        0xC4 => '\u{303}',
        0xC5 => '\u{304}',
        0xC6 => '\u{306}',
        0xC7 => '\u{307}',
        0xC8 | 0xC9 => '\u{308}',
        0xCA => '\u{30A}',
        0xCB => '\u{327}',
        0xCD => '\u{30B}',
        0xCE => '\u{328}',
        0xCF => '\u{30C}',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue(start: i64, end: i64, lines: &[&str]) -> Cue {
        Cue::from_lines(
            1,
            Millis(start),
            Millis(end),
            lines.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn frame_rates_pick_the_dfc() {
        let r = |n, d| FrameRate::new(n, d).unwrap();
        assert_eq!(stl_fps(r(25, 1)), 25);
        assert_eq!(stl_fps(r(50, 1)), 25);
        assert_eq!(stl_fps(r(24000, 1001)), 25);
        assert_eq!(stl_fps(r(24, 1)), 25);
        assert_eq!(stl_fps(r(30000, 1001)), 30);
        assert_eq!(stl_fps(r(30, 1)), 30);
        assert_eq!(stl_fps(r(60, 1)), 30);
    }

    #[test]
    fn frames_round_half_up_and_carry_into_the_second() {
        assert_eq!(timecode(Millis(20), 25), [0, 0, 0, 1]);
        assert_eq!(timecode(Millis(19), 25), [0, 0, 0, 0]);
        assert_eq!(timecode(Millis(999), 25), [0, 0, 1, 0]);
        assert_eq!(timecode(Millis(59_999), 25), [0, 1, 0, 0]);
        assert_eq!(timecode(Millis(360_000_000), 25), [100, 0, 0, 0]);
        assert_eq!(timecode(Millis(i64::MAX), 25), [255, 59, 59, 24]);
        assert_eq!(timecode(Millis(-5), 30), [0, 0, 0, 0]);
    }

    #[test]
    fn a_cue_shorter_than_a_frame_still_lasts_one() {
        let (tci, tco) = cue_timecodes(&cue(1000, 1001, &["a"]), 25);
        assert_eq!((tci, tco), ([0, 0, 1, 0], [0, 0, 1, 1]));
    }

    #[test]
    fn long_text_splits_between_pairs_never_inside() {
        let split = |tf: &[u8]| {
            let mut points = Vec::new();
            split_points(tf, &mut points);
            points
        };
        let mut tf = vec![b'a'; 111];
        tf.extend_from_slice(&[0xC2, b'e', b'b']);
        assert_eq!(split(&tf), vec![111, 114]);
        assert_eq!(split(&[]), vec![0]);
        let huge = vec![b'x'; 112 * 300];
        assert_eq!(split(&huge).len(), MAX_BLOCKS_PER_SUBTITLE);
    }

    #[test]
    fn control_bytes_are_found_anywhere_in_a_line() {
        assert!(!has_control_byte(
            b"plain text with no controls, caf\xC3\xA9"
        ));
        for at in 0..20 {
            let mut line = vec![b'a'; 20];
            line[at] = b'\n';
            assert!(has_control_byte(&line), "{at}");
            line[at] = 0x1F;
            assert!(has_control_byte(&line), "{at}");
            line[at] = 0x20;
            assert!(!has_control_byte(&line), "{at}");
            line[at] = 0xFF;
            assert!(!has_control_byte(&line), "{at}");
        }
    }

    #[test]
    fn language_tags_map_to_the_ebu_table() {
        assert_eq!(&language_code("en"), b"09");
        assert_eq!(&language_code("zh-TW"), b"75");
        assert_eq!(&language_code("nl_BE"), b"2A");
        assert_eq!(&language_code("NB"), b"1E");
        assert_eq!(&language_code("auto"), b"00");
        assert_eq!(&language_code(""), b"00");
    }

    #[test]
    fn control_codes_between_letters_read_as_spaces() {
        let lines = decode_text(
            b"\x0d\x0b\x0ba\x07b \x80c\x81\x0a\x0a\x8a\x8a\x0d\x0b\x0bd\x0a\x0a",
            &Charset::Iso6937,
        );
        assert_eq!(lines, ["a b c", "d"]);
        let single = decode_text(b"one\x8atwo\x8a", &Charset::Iso6937);
        assert_eq!(single, ["one", "two"]);
    }

    #[test]
    fn unknown_pairs_compose_or_keep_the_mark() {
        assert_eq!(decode_text(&[0xC1, b'n'], &Charset::Iso6937), ["ǹ"]);
        assert_eq!(decode_text(&[0xC2], &Charset::Iso6937), [""]);
    }
}
