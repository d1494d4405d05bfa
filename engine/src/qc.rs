//! Quality control: the checks a professional subtitler runs over a finished file (Netflix's,
//! broadcasters' style checkers), as one pure function over cues. `cuecraft check` and the web
//! editor's live warnings both call [`check`], so a file passes or fails the same way everywhere.
//!
//! ```
//! use cuecraft_engine::qc::{check, Level, QcStyle, Rule};
//! use cuecraft_engine::{Cue, FrameRate, Millis};
//! let cues = vec![Cue::from_lines(
//!     1,
//!     Millis(0),
//!     Millis(500),
//!     vec!["A line that is read far too fast".to_string()],
//! )];
//! let report = check(&cues, &QcStyle::netflix_en(), FrameRate::FPS_25);
//! assert_eq!(report.findings[0].rule, Rule::ReadingPace);
//! assert_eq!(report.summary.count(Rule::DurationShort), 1);
//! assert!(!report.has_errors());
//! ```
//!
//! Every rule reads only what a file holds (times and lines) except [`Rule::SilenceBridged`],
//! which needs the cues' words (laid-out cues and the API's JSON cues carry them; cues read from
//! a subtitle file do not, and that rule is then silent).

use unicode_segmentation::UnicodeSegmentation;

use crate::layout::{self, shots};
use crate::{ContentProfile, Cue, FrameRate, Millis, Settings, SubtitleMode, Word};

/// How serious a finding is: an error fails the check (`cuecraft check` exits with status 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// A hard limit is broken: the file would be rejected.
    Error,
    /// A style rule is broken: worth a look, acceptable with a reason.
    Warning,
}

impl Level {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// One QC rule. The ids ([`Rule::id`]) are stable: CI scripts match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `reading-pace` (warning): characters per second over the style's maximum. CPS = the
    /// graphemes of the lines joined by one space, spaces and punctuation included, divided by
    /// the cue's duration.
    ReadingPace,
    /// `line-length` (error): a line with more graphemes than the style allows.
    LineLength,
    /// `line-count` (error): more lines than the style allows.
    LineCount,
    /// `duration-short` (warning): shorter than the style's minimum (5/6 s, a flash, unless the
    /// style says otherwise).
    DurationShort,
    /// `duration-long` (error): longer than the style's maximum.
    DurationLong,
    /// `gap` (error): fewer frames than the style's minimum between a cue and the next (an
    /// overlap included).
    Gap,
    /// `chaining` (warning): a gap of at most the chaining threshold (0.5 s) that is not closed to
    /// the minimum number of frames (a gap with a shot change in it excepted, when checked
    /// against a shot list).
    Chaining,
    /// `weak-line-end` (warning): a line ending in an article, preposition, conjunction, subject
    /// pronoun or possessive, with no punctuation after it.
    WeakLineEnd,
    /// `one-word-line` (warning): a line of one word in a cue of several lines (a dialogue line
    /// opening with a dash excepted).
    OneWordLine,
    /// `needless-lines` (warning): text that fits on one line laid out on several.
    NeedlessLines,
    /// `sentence-inside` (warning): a sentence ends inside a cue rather than at its end (the end
    /// of a dialogue line excepted).
    SentenceInside,
    /// `silence-bridged` (warning): a cue holds its text over a long silence: between two of its
    /// words, or after its last word beyond what reading pace, the minimum duration or chaining
    /// needs. Needs the cues' words.
    SilenceBridged,
    /// `shot-change-in` (warning): a cue starts within half a second after a shot change (or at
    /// most two frames before one) rather than on it, where the previous cue could have ended
    /// the frame gap before the cut. Checked only against a shot list
    /// ([`check_with_shots`]).
    ShotChangeIn,
    /// `shot-change-out` (warning): a cue ends less than half a second after a shot change it
    /// crosses (or less than two frames before one), where it could have ended two frames
    /// before the cut (its speech, reading pace and minimum duration allowing) or stayed up half a
    /// second past it (the next cue and the maximum duration allowing). Checked only against a
    /// shot list ([`check_with_shots`]).
    ShotChangeOut,
}

impl Rule {
    /// Every rule, in the order findings and summaries list them.
    pub const ALL: [Rule; 14] = [
        Rule::ReadingPace,
        Rule::LineLength,
        Rule::LineCount,
        Rule::DurationShort,
        Rule::DurationLong,
        Rule::Gap,
        Rule::Chaining,
        Rule::WeakLineEnd,
        Rule::OneWordLine,
        Rule::NeedlessLines,
        Rule::SentenceInside,
        Rule::SilenceBridged,
        Rule::ShotChangeIn,
        Rule::ShotChangeOut,
    ];

    /// The stable id (`reading-pace`).
    pub fn id(self) -> &'static str {
        match self {
            Rule::ReadingPace => "reading-pace",
            Rule::LineLength => "line-length",
            Rule::LineCount => "line-count",
            Rule::DurationShort => "duration-short",
            Rule::DurationLong => "duration-long",
            Rule::Gap => "gap",
            Rule::Chaining => "chaining",
            Rule::WeakLineEnd => "weak-line-end",
            Rule::OneWordLine => "one-word-line",
            Rule::NeedlessLines => "needless-lines",
            Rule::SentenceInside => "sentence-inside",
            Rule::SilenceBridged => "silence-bridged",
            Rule::ShotChangeIn => "shot-change-in",
            Rule::ShotChangeOut => "shot-change-out",
        }
    }

    /// Whether breaking the rule is an error or a warning.
    pub fn level(self) -> Level {
        match self {
            Rule::LineLength | Rule::LineCount | Rule::DurationLong | Rule::Gap => Level::Error,
            _ => Level::Warning,
        }
    }

    /// What the rule's share in a summary is counted against.
    pub fn unit(self) -> Unit {
        match self {
            Rule::LineLength | Rule::WeakLineEnd | Rule::OneWordLine => Unit::Lines,
            Rule::Gap | Rule::Chaining => Unit::Gaps,
            Rule::SentenceInside => Unit::SentenceEnds,
            _ => Unit::Cues,
        }
    }
}

/// What a rule's findings are counted against in a [`Summary`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Cues.
    Cues,
    /// Lines of all cues.
    Lines,
    /// Pairs of consecutive cues.
    Gaps,
    /// Sentence-ending words.
    SentenceEnds,
}

impl Unit {
    /// `cues`, `lines`, `gaps` or `sentenceEnds`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Cues => "cues",
            Unit::Lines => "lines",
            Unit::Gaps => "gaps",
            Unit::SentenceEnds => "sentenceEnds",
        }
    }
}

/// The limits a file is checked against. Build one with a preset ([`QcStyle::netflix_en`],
/// [`QcStyle::bbc`]) or from a job's settings ([`QcStyle::from_settings`]); the fields are public
/// so a caller can adjust one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QcStyle {
    /// The style's name as `cuecraft check` prints it (`netflix-en`).
    pub name: String,
    /// Graphemes per line.
    pub max_chars_per_line: u32,
    /// Lines per cue.
    pub max_lines: u32,
    /// Reading pace, characters per second; `None`: not checked.
    pub max_cps: Option<u32>,
    /// Shortest cue; `Millis(0)`: not checked.
    pub min_duration: Millis,
    /// Longest cue; `None`: not checked.
    pub max_duration: Option<Millis>,
    /// Frames between consecutive cues (of the frame rate passed to [`check`]).
    pub min_gap_frames: u32,
    /// Gaps up to this long should be closed to `min_gap_frames` (chaining); `Millis(0)`: not
    /// checked.
    pub chain_gap: Millis,
    /// A silence at least this long between two words should end the cue.
    pub long_silence: Millis,
    /// How long a cue may stay up after its last word beyond what reading pace, the minimum
    /// duration and chaining need.
    pub max_hang: Millis,
    /// Added to word times before they are compared with cue times (the settings' `shiftMs`:
    /// cues move, words keep their detected times).
    pub word_shift: Millis,
}

/// 5/6 s: shorter cues flash by (Netflix's minimum duration, the layout's flash threshold).
pub const FLASH: Millis = Millis(833);

/// Gaps up to this long are chained (closed to the frame gap), as the layout does.
pub const CHAIN_GAP: Millis = Millis(500);

impl QcStyle {
    /// Netflix's English timed-text style: 42 characters per line, 2 lines, 20 characters per
    /// second (adult programmes), 5/6 s to 7 s, 2 frames between cues and gaps up to 0.5 s
    /// closed to 2 frames, no text held over a 2 s silence between words nor more than 0.5 s
    /// after speech beyond what pace and duration need.
    pub fn netflix_en() -> QcStyle {
        QcStyle {
            name: "netflix-en".to_string(),
            max_chars_per_line: 42,
            max_lines: 2,
            max_cps: Some(20),
            min_duration: FLASH,
            max_duration: Some(Millis(7000)),
            min_gap_frames: 2,
            chain_gap: CHAIN_GAP,
            long_silence: Millis(2000),
            max_hang: Millis(500),
            word_shift: Millis::ZERO,
        }
    }

    /// The BBC's subtitle guidelines: 37 characters per line (teletext, and about 68% of a 16:9
    /// picture), 2 lines, 180 words a minute taken as 17 characters per second (English words
    /// average about 5.7 characters with their space), 5/6 s minimum, no maximum, 2 frames
    /// between cues (no chaining rule), and text not hanging on more than 1.5 s after speech.
    pub fn bbc() -> QcStyle {
        QcStyle {
            name: "bbc".to_string(),
            max_chars_per_line: 37,
            max_lines: 2,
            max_cps: Some(17),
            min_duration: FLASH,
            max_duration: None,
            min_gap_frames: 2,
            chain_gap: Millis::ZERO,
            long_silence: Millis(2000),
            max_hang: Millis(1500),
            word_shift: Millis::ZERO,
        }
    }

    /// The style a job's own settings promise: their line limits (audiogram: one line of at most
    /// 20), their reading pace (`auto` resolved from `words` as the layout resolves it; none in
    /// audiogram mode), their minimum duration (and 5/6 s in smart mode outside audiogram),
    /// maximum duration, frame gap, chaining at 0.5 s, the layout's hard silence (2 s, 0.3 s in
    /// audiogram mode) and no hang after speech beyond what those need. Named `settings`.
    pub fn from_settings(settings: &Settings, words: &[Word]) -> QcStyle {
        let audiogram = settings.subtitle_mode == SubtitleMode::Audiogram;
        let max_chars = settings.max_chars_per_line.max(1);
        let cps = match settings.content_profile {
            ContentProfile::Balanced => 17,
            ContentProfile::Dense => 20,
            ContentProfile::Dramatic => 15,
            ContentProfile::Auto => crate::layout::auto_cps_of(words) as u32,
        };
        let min = settings
            .min_duration
            .unwrap_or(Millis::ZERO)
            .max(Millis::ZERO);
        let flash = settings.format_subtitles && !audiogram;
        QcStyle {
            name: "settings".to_string(),
            max_chars_per_line: if audiogram {
                max_chars.min(20)
            } else {
                max_chars
            },
            max_lines: if audiogram {
                1
            } else {
                settings.max_lines_per_subtitle.max(1)
            },
            max_cps: (!audiogram).then_some(cps),
            min_duration: if flash { min.max(FLASH) } else { min },
            max_duration: settings.max_duration.filter(|m| m.0 > 0),
            min_gap_frames: settings.min_frames_between_subtitles,
            chain_gap: CHAIN_GAP,
            long_silence: Millis(if audiogram { 300 } else { 2000 }),
            max_hang: Millis::ZERO,
            word_shift: Millis(settings.shift_ms as i64),
        }
    }
}

/// One rule broken by one cue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule.
    pub rule: Rule,
    /// The rule's level (as [`Rule::level`]).
    pub level: Level,
    /// Position of the cue in the slice passed to [`check`] (0-based). For a gap, the earlier
    /// cue of the two.
    pub cue: usize,
    /// What is wrong, for a person (`21.3 characters per second, over 17`).
    pub message: String,
}

/// Totals over a file: how many findings each rule has and what they are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// Cues checked.
    pub cues: usize,
    /// Lines of all cues.
    pub lines: usize,
    /// Pairs of consecutive cues.
    pub gaps: usize,
    /// Words ending a sentence (`.`, `?`, `!`, closing quotes after them allowed; not `...`).
    pub sentence_ends: usize,
    /// Findings per rule, in [`Rule::ALL`]'s order.
    pub counts: [usize; Rule::ALL.len()],
    /// Error-level findings.
    pub errors: usize,
    /// Warning-level findings.
    pub warnings: usize,
}

impl Summary {
    /// Findings of `rule`.
    pub fn count(&self, rule: Rule) -> usize {
        self.counts[rule as usize]
    }

    /// What `rule`'s findings are counted against (cues, lines, gaps or sentence ends).
    pub fn total(&self, rule: Rule) -> usize {
        match rule.unit() {
            Unit::Cues => self.cues,
            Unit::Lines => self.lines,
            Unit::Gaps => self.gaps,
            Unit::SentenceEnds => self.sentence_ends,
        }
    }

    /// `rule`'s findings as a percentage of its total (0 when the total is 0).
    pub fn percent(&self, rule: Rule) -> f64 {
        match self.total(rule) {
            0 => 0.0,
            t => self.count(rule) as f64 * 100.0 / t as f64,
        }
    }
}

/// The findings and their summary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// Every rule broken, by cue; a cue's in [`Rule::ALL`]'s order, the line rules line by line.
    pub findings: Vec<Finding>,
    /// Totals.
    pub summary: Summary,
}

impl Report {
    /// Whether any error-level rule failed.
    pub fn has_errors(&self) -> bool {
        self.summary.errors > 0
    }
}

/// Graphemes of `s` (ASCII: its length).
fn graphemes(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.graphemes(true).count()
    }
}

/// Closing quotes and brackets, which do not hide the punctuation before them.
const CLOSERS: [char; 11] = ['"', '\'', ')', ']', '}', '»', '”', '’', '」', '』', '）'];

/// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS: [&str; 10] = [
    "mr.", "mrs.", "ms.", "dr.", "st.", "prof.", "vs.", "e.g.", "i.e.", "jr.",
];

/// Whether a word (as shown, punctuation attached) ends a sentence: `.`, `?`, `!` and their CJK
/// forms, before closing quotes; an ellipsis (`...`, `…`) trails off rather than ends, and a
/// common abbreviation's full stop does not end a sentence.
pub fn ends_sentence(word: &str) -> bool {
    let t = word.trim_end_matches(CLOSERS);
    let Some(last) = t.chars().next_back() else {
        return false;
    };
    match last {
        '?' | '!' | '。' | '？' | '！' | '‽' => true,
        '.' => {
            !t.ends_with("..")
                && !ABBREVIATIONS
                    .iter()
                    .any(|a| t.len() == a.len() && t.eq_ignore_ascii_case(a))
        }
        _ => false,
    }
}

/// Articles, prepositions, conjunctions, subject pronouns and possessive determiners, after which
/// a line should not end (English, and the commonest of Dutch, German, French and Spanish that
/// are not also English words a line may end in).
const WEAK_LINE_ENDS: [&str; 55] = [
    "a", "an", "the", "and", "or", "but", "nor", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "onto", "upon", "about", "as", "if", "than", "because", "while", "until",
    "unless", "my", "your", "our", "their", "i", "he", "she", "we", "they", "de", "het", "een",
    "en", "der", "das", "und", "le", "la", "les", "un", "une", "et", "el", "los", "las", "y",
    "whose", "although",
];

/// Whether a line's last word (punctuation attached) is one a line should not end in: a weak
/// word with nothing after it (`the`, `and`; not `in.` or `I,`).
pub fn weak_line_end(word: &str) -> bool {
    word.len() <= 8
        && WEAK_LINE_ENDS
            .iter()
            .any(|w| w.len() == word.len() && w.eq_ignore_ascii_case(word))
}

/// Whether a line opens a speaker's turn in a dialogue cue (`—Yes.`, `- Yes.`).
fn is_dialogue_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('\u{2014}') || t.starts_with('\u{2013}') || t.starts_with("- ")
}

/// Checks `cues` (in the order given) against `style`, on the frame grid of `frame_rate` (gaps
/// are counted in its frames). Pure; never panics; linear in the cues' text. The shot-change
/// rules need a shot list: [`check_with_shots`].
pub fn check(cues: &[Cue], style: &QcStyle, frame_rate: FrameRate) -> Report {
    check_with_shots(cues, style, frame_rate, &[])
}

/// [`check`], with the shot-change rules against `shot_changes` (the times of the media's shot
/// changes, any order): [`Rule::ShotChangeIn`] and [`Rule::ShotChangeOut`], at `frame_rate`
/// (half a second is 12 frames at 23.976, 24 and 25 fps, 15 at 29.97).
pub fn check_with_shots(
    cues: &[Cue],
    style: &QcStyle,
    frame_rate: FrameRate,
    shot_changes: &[Millis],
) -> Report {
    let cuts = shots::shot_frames(shot_changes, frame_rate);
    let mut out = Report::default();
    let s = &mut out.summary;
    s.cues = cues.len();
    s.gaps = cues.len().saturating_sub(1);
    let findings = &mut out.findings;
    let mut inside_total = 0;
    let mut widths: Vec<usize> = Vec::new();
    let mut add = |rule: Rule, cue: usize, message: String| {
        findings.push(Finding {
            rule,
            level: rule.level(),
            cue,
            message,
        })
    };
    for (i, c) in cues.iter().enumerate() {
        let dur = (c.end - c.start).0;
        s.lines += c.lines.len();
        widths.clear();
        widths.extend(c.lines.iter().map(|l| graphemes(l)));
        let chars = widths.iter().sum::<usize>() + c.lines.len().max(1) - 1;
        if let Some(cps) = style.max_cps {
            if chars as i64 * 1000 > cps as i64 * dur {
                let msg = if dur > 0 {
                    format!(
                        "{:.1} characters per second, over {cps}",
                        chars as f64 * 1000.0 / dur as f64
                    )
                } else {
                    format!("{chars} characters shown for no time")
                };
                add(Rule::ReadingPace, i, msg);
            }
        }
        for (n, &g) in widths.iter().enumerate() {
            if g > style.max_chars_per_line as usize {
                add(
                    Rule::LineLength,
                    i,
                    format!(
                        "line {} has {g} characters, over {}",
                        n + 1,
                        style.max_chars_per_line
                    ),
                );
            }
        }
        if c.lines.len() > style.max_lines as usize {
            add(
                Rule::LineCount,
                i,
                format!("{} lines, over {}", c.lines.len(), style.max_lines),
            );
        }
        if dur < style.min_duration.0 {
            add(
                Rule::DurationShort,
                i,
                format!(
                    "lasts {:.3} s, under {:.3} s",
                    dur as f64 / 1000.0,
                    style.min_duration.as_secs_f64()
                ),
            );
        }
        if let Some(max) = style.max_duration {
            if dur > max.0 {
                add(
                    Rule::DurationLong,
                    i,
                    format!(
                        "lasts {:.3} s, over {:.3} s",
                        dur as f64 / 1000.0,
                        max.as_secs_f64()
                    ),
                );
            }
        }
        if let Some(next) = cues.get(i + 1) {
            let gap_ms = (next.start - c.end).0;
            let gap_frames = frame_rate.frame_round(next.start) - frame_rate.frame_round(c.end);
            if gap_ms < 0 {
                add(
                    Rule::Gap,
                    i,
                    format!("overlaps the next cue by {} ms", -gap_ms),
                );
            } else if gap_frames < style.min_gap_frames as i64 {
                add(
                    Rule::Gap,
                    i,
                    format!(
                        "{gap_frames} frame{} before the next cue, under {}",
                        if gap_frames == 1 { "" } else { "s" },
                        style.min_gap_frames
                    ),
                );
            } else if gap_ms <= style.chain_gap.0
                && gap_frames > style.min_gap_frames as i64
                && !cut_in(
                    &cuts,
                    frame_rate.frame_round(c.end),
                    frame_rate.frame_round(next.start),
                )
            {
                add(
                    Rule::Chaining,
                    i,
                    format!(
                        "a {gap_ms} ms gap to the next cue is not closed to {} frame{}",
                        style.min_gap_frames,
                        if style.min_gap_frames == 1 { "" } else { "s" }
                    ),
                );
            }
        }
        for (n, line) in c.lines.iter().enumerate() {
            if let Some(w) = line
                .split_whitespace()
                .next_back()
                .filter(|w| weak_line_end(w))
            {
                add(
                    Rule::WeakLineEnd,
                    i,
                    format!("line {} ends in {w:?}", n + 1),
                );
            }
        }
        if c.lines.len() > 1 {
            for (n, line) in c.lines.iter().enumerate() {
                if !is_dialogue_line(line) && line.split_whitespace().take(2).count() == 1 {
                    add(Rule::OneWordLine, i, format!("line {} is one word", n + 1));
                }
            }
            if !c.lines.iter().any(|l| is_dialogue_line(l))
                && chars <= style.max_chars_per_line as usize
            {
                add(
                    Rule::NeedlessLines,
                    i,
                    format!(
                        "{chars} characters fit on one line of {} but take {}",
                        style.max_chars_per_line,
                        c.lines.len()
                    ),
                );
            }
        }
        // Sentence ends: at the cue's end, at the end of a line the next speaker's dash follows,
        // or inside the cue.
        let mut inside = 0;
        for (n, line) in c.lines.iter().enumerate() {
            let mut words = line.split_whitespace().peekable();
            while let Some(w) = words.next() {
                if !ends_sentence(w) {
                    continue;
                }
                s.sentence_ends += 1;
                let line_end = words.peek().is_none();
                let at_end = line_end
                    && match c.lines.get(n + 1) {
                        None => true,
                        Some(next) => is_dialogue_line(next),
                    };
                if !at_end {
                    inside += 1;
                }
            }
        }
        inside_total += inside;
        if inside > 0 {
            add(
                Rule::SentenceInside,
                i,
                if inside == 1 {
                    "a sentence ends inside the cue".to_string()
                } else {
                    format!("{inside} sentences end inside the cue")
                },
            );
        }
        if let Some(msg) = bridged(cues, i, chars, style, frame_rate, &cuts) {
            add(Rule::SilenceBridged, i, msg);
        }
        if !cuts.is_empty() {
            if let Some(msg) = shot_in(cues, i, &cuts, style, frame_rate) {
                add(Rule::ShotChangeIn, i, msg);
            }
            if let Some(msg) = shot_out(cues, i, chars, &cuts, style, frame_rate) {
                add(Rule::ShotChangeOut, i, msg);
            }
        }
    }
    for f in &out.findings {
        out.summary.counts[f.rule as usize] += 1;
        match f.level {
            Level::Error => out.summary.errors += 1,
            Level::Warning => out.summary.warnings += 1,
        }
    }
    // Sentence ends are counted once per word; a cue's finding may stand for several.
    out.summary.counts[Rule::SentenceInside as usize] = inside_total;
    out
}

/// Whether a shot change falls in the gap from frame `end` to `next` (both included: a cue that
/// ends on the cut or a next cue that starts on it): such a gap is timed to the cut rather than
/// chained.
fn cut_in(cuts: &[i64], end: i64, next: i64) -> bool {
    let i = cuts.partition_point(|&c| c < end);
    cuts.get(i).is_some_and(|&c| c <= next)
}

/// The first frame at or after `t`.
fn frame_ceil(fr: FrameRate, t: i64) -> i64 {
    let f = fr.frame_floor(Millis(t));
    if fr.frame_start(f).0 < t {
        f + 1
    } else {
        f
    }
}

/// Graphemes a cue's lines show, one per line break as well (as reading pace counts them).
fn cue_chars(c: &Cue) -> usize {
    c.lines.iter().map(|l| graphemes(l)).sum::<usize>() + c.lines.len().max(1) - 1
}

/// The earliest frame cue `c` (of `chars` characters) may end on: its last word with text (the
/// style's word shift added; none for a file without words), its reading pace and the minimum
/// duration (at most the maximum duration), as the layout extends cues.
fn needed_end(c: &Cue, chars: usize, style: &QcStyle, fr: FrameRate) -> i64 {
    needed_end_from(c, c.start.0, chars, style, fr)
}

/// [`needed_end`] of cue `c` shown from `start` (ms) instead.
fn needed_end_from(c: &Cue, start: i64, chars: usize, style: &QcStyle, fr: FrameRate) -> i64 {
    let mut need = style.min_duration.0.max(0);
    if let Some(cps) = style.max_cps {
        let cps = cps.max(1) as i64;
        need = need.max((chars as i64 * 1000 + cps - 1) / cps);
    }
    if let Some(max) = style.max_duration {
        need = need.min(max.0.max(0));
    }
    let speech = c
        .words
        .iter()
        .rev()
        .find(|w| !w.text.trim().is_empty())
        .map_or(i64::MIN, |w| {
            fr.frame_round(Millis((w.end + style.word_shift).0.max(0)))
        });
    frame_ceil(fr, start + need).max(speech)
}

/// The frame the cue after cue `i` starts on as cue `i`'s out-time sees it: its start, or where
/// its words start when it starts later than they do (moved on to a cut just after them, which
/// the out-time before it could not know). `None` for the last cue.
fn next_start(cues: &[Cue], i: usize, style: &QcStyle, fr: FrameRate, cuts: &[i64]) -> Option<i64> {
    let n = cues.get(i + 1)?;
    let f = fr.frame_round(n.start);
    let words = n
        .words
        .iter()
        .find(|w| !w.text.trim().is_empty())
        .map(|w| fr.frame_round(Millis((w.start + style.word_shift).0.max(0))));
    Some(match words {
        Some(w) if w < f && cuts.binary_search(&f).is_ok() => w,
        _ => f,
    })
}

/// The cuts an out-time of cue `i` may hang over: those up to the next cue's start.
fn cuts_before_next<'a>(
    cuts: &'a [i64],
    cues: &[Cue],
    i: usize,
    style: &QcStyle,
    fr: FrameRate,
) -> &'a [i64] {
    match next_start(cues, i, style, fr, cuts) {
        Some(n) => &cuts[..cuts.partition_point(|&c| c <= n)],
        None => cuts,
    }
}

/// The latest frame cue `i` starting on frame `s` may end on: the frame gap before the next cue
/// (as [`next_start`]), the maximum duration.
fn room(cues: &[Cue], i: usize, s: i64, style: &QcStyle, fr: FrameRate, cuts: &[i64]) -> i64 {
    let mut room =
        next_start(cues, i, style, fr, cuts).map_or(i64::MAX, |n| n - style.min_gap_frames as i64);
    if let Some(max) = style.max_duration {
        room = room.min(fr.frame_floor(Millis(fr.frame_start(s).0 + max.0)));
    }
    room
}

/// `t` as seconds for a message.
fn secs(fr: FrameRate, frame: i64) -> String {
    format!("{:.3} s", fr.frame_start(frame).as_secs_f64())
}

/// Whether cue `i` starts near a shot change rather than on it where it could have started on it:
/// at most two frames before it (the cue keeping the time it needs when it starts on the cut), or
/// within half a second after it (the previous cue able to end the frame gap before the cut).
fn shot_in(cues: &[Cue], i: usize, cuts: &[i64], style: &QcStyle, fr: FrameRate) -> Option<String> {
    let s = fr.frame_round(cues[i].start);
    let cut = shots::start_cut(cuts, s, shots::half_second(fr))?;
    if cut > s {
        // Unless starting on the cut would leave the cue less than it needs.
        let c = &cues[i];
        let e = fr.frame_round(c.end);
        let need = needed_end_from(c, fr.frame_start(cut).0, cue_chars(c), style, fr);
        if cut >= e || need > room(cues, i, cut, style, fr, cuts) {
            return None;
        }
        let n = cut - s;
        return Some(format!(
            "starts {n} frame{} before the shot change at {}",
            if n == 1 { "" } else { "s" },
            secs(fr, cut)
        ));
    }
    if let Some(prev) = i.checked_sub(1).and_then(|k| cues.get(k)) {
        // The previous cue could end the frame gap before the cut.
        let last = cut - style.min_gap_frames as i64;
        let need = needed_end(prev, cue_chars(prev), style, fr);
        if last <= fr.frame_round(prev.start) || need > last {
            return None;
        }
    }
    let n = s - cut;
    Some(format!(
        "starts {n} frame{} after the shot change at {}, not on it",
        if n == 1 { "" } else { "s" },
        secs(fr, cut)
    ))
}

/// Whether cue `i` ends a few frames over (or just before) a shot change where it could have
/// ended two frames before it (or before an earlier cut) or half a second after it, within its
/// needs (speech, pace, minimum duration) and its room (the next cue, the maximum duration).
fn shot_out(
    cues: &[Cue],
    i: usize,
    chars: usize,
    cuts: &[i64],
    style: &QcStyle,
    fr: FrameRate,
) -> Option<String> {
    let c = &cues[i];
    let (s, e) = (fr.frame_round(c.start), fr.frame_round(c.end));
    let half = shots::half_second(fr);
    let before = cuts_before_next(cuts, cues, i, style, fr);
    let cut = shots::hung_cut(before, s, e, half)?;
    let need = needed_end(c, chars, style, fr);
    let room = room(cues, i, s, style, fr, cuts);
    // Whether some out-time between those bounds keeps the rules.
    let fixed = shots::end_at_cuts(before, s, e, need, room, half);
    if shots::hung_cut(before, s, fixed, half).is_some() {
        return None;
    }
    Some(if e >= cut {
        format!(
            "ends {} frames after the shot change at {}, under half a second",
            e - cut,
            secs(fr, cut)
        )
    } else {
        format!(
            "ends {} frame{} before the shot change at {}, not {}",
            cut - e,
            if cut - e == 1 { "" } else { "s" },
            secs(fr, cut),
            shots::SHOT_GAP
        )
    })
}

/// Whether cue `i` holds text over a silence: between two of its words (a long silence), or past
/// its last word by more than the style's hang, reading pace, the minimum duration, chaining and
/// a frame of snapping need, or half a second past a shot change those needs would cross (the
/// shot-change rule). `None` when it does not, or when the cue has no words.
fn bridged(
    cues: &[Cue],
    i: usize,
    chars: usize,
    style: &QcStyle,
    fr: FrameRate,
    cuts: &[i64],
) -> Option<String> {
    let c = &cues[i];
    let last = c.words.last()?;
    let long = style.long_silence.0;
    if long > 0 {
        for pair in c.words.windows(2) {
            let gap = (pair[1].start - pair[0].end).0;
            if gap >= long {
                return Some(format!(
                    "holds its text over a {:.1} s silence between {:?} and {:?}",
                    gap as f64 / 1000.0,
                    pair[0].text.trim(),
                    pair[1].text.trim()
                ));
            }
        }
    }
    let speech_end = (last.end + style.word_shift).0;
    let start = c.start.0;
    let mut allowed = (speech_end + style.max_hang.0.max(0)).max(start);
    if let Some(cps) = style.max_cps {
        allowed =
            allowed.max(start + (chars as i64 * 1000 + cps.max(1) as i64 - 1) / cps.max(1) as i64);
    }
    allowed = allowed.max(start + style.min_duration.0);
    if let Some(max) = style.max_duration {
        allowed = allowed.min(start + max.0).max(speech_end);
    }
    // On the frame grid, as the layout extends cues (to the first frame at or after the need).
    let f = fr.frame_floor(Millis(allowed));
    let f = if fr.frame_start(f).0 < allowed {
        f + 1
    } else {
        f
    };
    let mut allowed = fr.frame_start(f).0;
    let half = shots::half_second(fr);
    let before = cuts_before_next(cuts, cues, i, style, fr);
    if let Some(cut) = shots::hung_cut(before, fr.frame_round(c.start), f, half) {
        allowed = allowed.max(fr.frame_start(cut + half).0);
    }
    if let Some(next) = cues.get(i + 1) {
        // Chaining closes a short gap left after those needs (against a shot list: to the next
        // cue's words when it starts later than they do, on a cut).
        let seen = match next_start(cues, i, style, fr, cuts) {
            Some(f) if !cuts.is_empty() => fr.frame_start(f).min(next.start),
            _ => next.start,
        };
        if (seen.0 - allowed) <= style.chain_gap.0 {
            allowed = allowed.max(next.start.0 - fr.frames_duration(style.min_gap_frames).0);
        }
    }
    // One frame for snapping the end to the grid.
    let allowed = allowed + fr.frames_duration(1).0;
    (c.end.0 > allowed).then(|| {
        format!(
            "stays up {:.2} s after its last word, {:.2} s longer than it needs",
            (c.end.0 - speech_end) as f64 / 1000.0,
            (c.end.0 - allowed) as f64 / 1000.0
        )
    })
}

/// The reachable best for reading pace: how few of the same number of cues must exceed the
/// style's pace however the same words are cut into cues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaceFloor {
    /// Cues (as many as the checked file has).
    pub cues: usize,
    /// The fewest of them that exceed the pace.
    pub over: usize,
}

impl PaceFloor {
    /// `over` as a percentage of `cues`.
    pub fn percent(&self) -> f64 {
        if self.cues == 0 {
            0.0
        } else {
            self.over as f64 * 100.0 / self.cues as f64
        }
    }
}

/// Words times cues above which [`pace_floor`] declines (its time is their product times the
/// words a cue can hold): about a second of work; a feature-length transcript is far below it.
const FLOOR_WORK: usize = 60_000_000;

/// The fewest cues over the style's pace among all ways of cutting the cues' words (in order)
/// into exactly as many cues that a layout may give, each of which:
/// - fits the style's lines (words wrapped greedily; a two-speaker cue one line per speaker, its
///   dash counted in the line and both dashes in the characters read),
/// - holds no silence of `long_silence` or more between its words,
/// - when it holds two speakers, holds the first one's turn from its start (issue 23): the word
///   before it is another speaker's or ends a sentence, as the layout reads sentence ends (`.`,
///   `?`, `!` before closing quotes; in words with no sentence punctuation at all, also a
///   silence of 0.3 s or more after the word). A dashed first line opening with the tail of a
///   sentence reads as a third voice, and the layout never gives one,
/// - stays up from its first word's start until `min_gap_frames` before the next cue's first
///   word (at most `max_duration`); the last cue as long as it needs.
///
/// That is the most any layout can give a cue without showing text before it is spoken, so no
/// layout of these words into this many cues has fewer over the pace (the definition and what it
/// leaves out: docs/decisions/layout.md, "The pace floor"). Speakers are the words' own
/// (`Word::speaker`): words read from the contract's cue JSON carry none, so a caller that knows
/// them sets them first. `None` when the style has no pace, a cue has no words (a subtitle
/// file), no such cutting exists, or the transcript is too long for the search (words times cues
/// over about 60 million).
pub fn pace_floor(cues: &[Cue], style: &QcStyle, frame_rate: FrameRate) -> Option<PaceFloor> {
    let (over, _) = Floor::new(cues, style, frame_rate)?.search(false)?;
    Some(PaceFloor {
        cues: cues.len(),
        over,
    })
}

/// A visible word as [`pace_floor`] sees it.
struct FloorWord {
    /// Graphemes.
    g: usize,
    /// Start and end, ms, with the style's word shift.
    start: i64,
    end: i64,
    speaker: u32,
    /// A two-speaker cue may not start at this word: the word before it is the same speaker's
    /// and ends no sentence.
    tail: bool,
}

/// The search behind [`pace_floor`]: the words and the style's limits.
struct Floor<'s> {
    words: Vec<FloorWord>,
    k_cues: usize,
    style: &'s QcStyle,
    cps: i64,
    gap: i64,
}

impl<'s> Floor<'s> {
    fn new(cues: &[Cue], style: &'s QcStyle, frame_rate: FrameRate) -> Option<Floor<'s>> {
        let cps = style.max_cps? as i64;
        let k_cues = cues.len();
        if k_cues == 0 || cues.iter().any(|c| c.words.is_empty()) {
            return None;
        }
        let shown: Vec<&Word> = cues
            .iter()
            .flat_map(|c| c.words.iter())
            .filter(|w| !w.text.trim().is_empty())
            .collect();
        let n = shown.len();
        if n < k_cues || n.saturating_mul(k_cues) > FLOOR_WORK {
            return None;
        }
        // Sentence ends as cue breaking reads them (a layout may open a dashed cue after each),
        // and in words without sentence punctuation its guesses from pauses: every pause of
        // 0.3 s, so that no end the layout guesses is missed (it leaves out articles and the
        // like, which only makes the floor's choice wider).
        let punctuated = shown.iter().any(|w| layout::breaks_sentence(&w.text));
        let words = shown
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let tail = k > 0 && {
                    let before = shown[k - 1];
                    let ends = if punctuated {
                        layout::breaks_sentence(&before.text)
                    } else {
                        w.start.0 - before.end.0 >= layout::PAUSE_SENTENCE_MS
                    };
                    before.speaker == w.speaker && !ends
                };
                FloorWord {
                    g: graphemes(w.text.trim()),
                    start: (w.start + style.word_shift).0,
                    end: (w.end + style.word_shift).0,
                    speaker: w.speaker,
                    tail,
                }
            })
            .collect();
        Some(Floor {
            words,
            k_cues,
            style,
            cps,
            gap: frame_rate.frames_duration(style.min_gap_frames).0,
        })
    }

    /// Whether words lo..hi fit one cue's lines (greedy wrap; each word at least one line's
    /// worth of pieces when longer than a line).
    fn fits(&self, lo: usize, hi: usize) -> bool {
        let max_chars = self.style.max_chars_per_line.max(1) as usize;
        let max_lines = self.style.max_lines.max(1) as usize;
        let wrap = |ws: &[FloorWord], lines_left: usize, extra: usize| -> bool {
            let mut lines = 1;
            let mut len = extra;
            for (k, w) in ws.iter().enumerate() {
                let add = if k == 0 { w.g } else { w.g + 1 };
                if len + add <= max_chars {
                    len += add;
                } else if k > 0 && w.g <= max_chars {
                    lines += 1;
                    len = w.g;
                } else {
                    // An over-long word is cut into pieces of a line.
                    let total = len + add;
                    lines += (total - 1) / max_chars;
                    len = (total - 1) % max_chars + 1;
                }
                if lines > lines_left {
                    return false;
                }
            }
            true
        };
        let ws = &self.words[lo..hi];
        match ws.iter().position(|w| w.speaker != ws[0].speaker) {
            None => wrap(ws, max_lines, 0),
            Some(at) => {
                max_lines >= 2
                    && ws[at..].iter().all(|w| w.speaker == ws[at].speaker)
                    && wrap(&ws[..at], 1, 1)
                    && wrap(&ws[at..], 1, 1)
            }
        }
    }

    /// The fewest cues over the pace, and with `keep` the cutting that has them (each cue's end,
    /// exclusive, as an index into `words`).
    fn search(&self, keep: bool) -> Option<(usize, Vec<usize>)> {
        let words = &self.words;
        let (n, k_cues) = (words.len(), self.k_cues);
        let long = self.style.long_silence.0;
        // Prefix sums of graphemes, for a cue's characters (words joined by one space), and of
        // speaker changes: a two-speaker cue also shows the dash that opens each of its two lines.
        let mut pre = vec![0usize; n + 1];
        let mut turns = vec![0usize; n + 1];
        for (k, w) in words.iter().enumerate() {
            pre[k + 1] = pre[k] + w.g;
            let turn = k > 0 && words[k - 1].speaker != w.speaker;
            turns[k + 1] = turns[k] + usize::from(turn);
        }
        // For each cue end `hi`, the earliest start `lo` that still fits (fitting is monotone: a
        // cue that fits still fits without its first word).
        let mut earliest = vec![0usize; n + 1];
        let mut lo = 0;
        for hi in 1..=n {
            if hi > 1 && long > 0 && words[hi - 1].start - words[hi - 2].end >= long {
                lo = hi - 1;
            }
            while lo < hi - 1 && !self.fits(lo, hi) {
                lo += 1;
            }
            earliest[hi] = lo;
        }
        // Whether words lo..hi may be one cue (fitting aside): one speaker, or two whose first
        // turn starts with the cue.
        let allowed =
            |lo: usize, hi: usize| -> bool { !words[lo].tail || turns[hi] == turns[lo + 1] };
        let over = |lo: usize, hi: usize| -> u32 {
            let dashes = if turns[hi] > turns[lo + 1] { 2 } else { 0 };
            let chars = (pre[hi] - pre[lo] + (hi - lo - 1) + dashes) as i64;
            let Some(next) = words.get(hi) else {
                return 0;
            };
            let mut avail = next.start - self.gap - words[lo].start;
            if let Some(max) = self.style.max_duration {
                avail = avail.min(max.0);
            }
            (chars * 1000 > self.cps * avail) as u32
        };
        const INF: u32 = u32::MAX / 2;
        // best[hi]: fewest cues over the pace among cuttings of words[..hi] into k cues; with
        // `keep`, from[(k - 1) * (n + 1) + hi] the start of the k-th cue in that cutting.
        let mut best = vec![INF; n + 1];
        best[0] = 0;
        let mut next = vec![INF; n + 1];
        let mut from = vec![0u32; if keep { k_cues * (n + 1) } else { 0 }];
        for k in 1..=k_cues {
            next[0] = INF;
            // With k cues, at least k words are needed and k_cues - k must remain for the rest.
            for hi in 1..=n {
                let mut b = INF;
                let mut arg = 0;
                if hi >= k && n - hi >= k_cues - k {
                    let start = earliest[hi].max(k - 1);
                    for (lo, &prev) in best.iter().enumerate().take(hi).skip(start) {
                        if prev < INF && allowed(lo, hi) {
                            let cost = prev + over(lo, hi);
                            if cost < b {
                                b = cost;
                                arg = lo;
                            }
                        }
                    }
                }
                next[hi] = b;
                if keep {
                    from[(k - 1) * (n + 1) + hi] = arg as u32;
                }
            }
            std::mem::swap(&mut best, &mut next);
        }
        if best[n] >= INF {
            return None;
        }
        let mut ends = Vec::new();
        if keep {
            let mut hi = n;
            for k in (1..=k_cues).rev() {
                ends.push(hi);
                hi = from[(k - 1) * (n + 1) + hi] as usize;
            }
            ends.reverse();
        }
        Some((best[n] as usize, ends))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue(start: i64, end: i64, lines: &[&str]) -> Cue {
        Cue::from_lines(
            1,
            Millis(start),
            Millis(end),
            lines.iter().map(|l| l.to_string()).collect(),
        )
    }

    /// A cue whose words are timed as given: `(text, start, end)`, lines from the words.
    fn cue_words(start: i64, end: i64, words: &[(&str, i64, i64)]) -> Cue {
        let text: Vec<&str> = words.iter().map(|w| w.0).collect();
        let mut c = cue(start, end, &[&text.join(" ")]);
        c.words = words
            .iter()
            .map(|&(t, s, e)| Word::new(t, Millis(s), Millis(e), 0))
            .collect();
        c
    }

    /// The rules `cues` break under `style` at 25 fps, with the cue each finding names.
    fn broken(cues: &[Cue], style: &QcStyle) -> Vec<(Rule, usize)> {
        check(cues, style, FrameRate::FPS_25)
            .findings
            .iter()
            .map(|f| (f.rule, f.cue))
            .collect()
    }

    /// Whether `rule` is among the rules `cues` break under Netflix's style.
    fn breaks(rule: Rule, cues: &[Cue]) -> bool {
        broken(cues, &QcStyle::netflix_en())
            .iter()
            .any(|&(r, _)| r == rule)
    }

    #[test]
    fn reading_pace_counts_graphemes_with_the_joining_space() {
        // 19 + 1 + 20 = 40 characters in 2 s is 20 per second: at Netflix's limit, not over.
        let at = cue(0, 2000, &["Nineteen characters", "and twenty of them.."]);
        assert!(!breaks(Rule::ReadingPace, &[at]));
        let over = cue(0, 1960, &["Nineteen characters", "and twenty of them.."]);
        assert!(breaks(Rule::ReadingPace, std::slice::from_ref(&over)));
        let f = &check(&[over], &QcStyle::netflix_en(), FrameRate::FPS_25).findings[0];
        assert_eq!(f.message, "20.4 characters per second, over 20");
        assert_eq!(f.level, Level::Warning);
    }

    #[test]
    fn line_length_counts_grapheme_clusters_not_bytes() {
        // 42 clusters, each an e with a combining acute accent (84 chars, 126 bytes).
        let accents = "e\u{301}".repeat(42);
        assert!(!breaks(Rule::LineLength, &[cue(0, 5000, &[&accents])]));
        let long = "x".repeat(43);
        assert_eq!(
            broken(&[cue(0, 5000, &["fine", &long])], &QcStyle::netflix_en()),
            vec![
                (Rule::LineLength, 0),
                (Rule::OneWordLine, 0),
                (Rule::OneWordLine, 0)
            ]
        );
        let r = check(
            &[cue(0, 5000, &[&long])],
            &QcStyle::netflix_en(),
            FrameRate::FPS_25,
        );
        assert_eq!(r.findings[0].message, "line 1 has 43 characters, over 42");
        assert!(r.has_errors());
    }

    #[test]
    fn line_count_over_the_style_is_an_error() {
        let two = cue(
            0,
            5000,
            &["The first line of it", "and then the second one."],
        );
        assert!(!breaks(Rule::LineCount, &[two]));
        let three = cue(
            0,
            5000,
            &["One line here", "another line here", "and a third."],
        );
        assert!(breaks(Rule::LineCount, std::slice::from_ref(&three)));
        assert_eq!(
            check(&[three], &QcStyle::netflix_en(), FrameRate::FPS_25)
                .summary
                .errors,
            1
        );
    }

    #[test]
    fn a_cue_under_five_sixths_of_a_second_flashes() {
        assert!(!breaks(Rule::DurationShort, &[cue(0, 840, &["Yes."])]));
        assert!(breaks(Rule::DurationShort, &[cue(0, 800, &["Yes."])]));
        // A style's own minimum: the job asked for 1.5 s.
        let settings = Settings {
            min_duration: Some(Millis(1500)),
            ..Settings::default()
        };
        let style = QcStyle::from_settings(&settings, &[]);
        assert_eq!(
            broken(&[cue(0, 1200, &["Yes."])], &style),
            vec![(Rule::DurationShort, 0)]
        );
    }

    #[test]
    fn a_cue_over_the_maximum_duration_is_an_error() {
        assert!(!breaks(
            Rule::DurationLong,
            &[cue(0, 7000, &["A long cue."])]
        ));
        assert!(breaks(
            Rule::DurationLong,
            &[cue(0, 7040, &["A long cue."])]
        ));
        // BBC sets no maximum.
        assert!(broken(&[cue(0, 9000, &["A long cue."])], &QcStyle::bbc()).is_empty());
    }

    #[test]
    fn gaps_under_the_frame_minimum_and_overlaps_are_errors() {
        // Netflix: 2 frames, 80 ms at 25 fps.
        let ok = [cue(0, 1000, &["One."]), cue(1080, 2000, &["Two."])];
        assert!(!breaks(Rule::Gap, &ok));
        let short = [cue(0, 1000, &["One."]), cue(1040, 2000, &["Two."])];
        assert_eq!(broken(&short, &QcStyle::netflix_en()), vec![(Rule::Gap, 0)]);
        let overlap = [cue(0, 1100, &["One."]), cue(1000, 2000, &["Two."])];
        let r = check(&overlap, &QcStyle::netflix_en(), FrameRate::FPS_25);
        assert_eq!(r.findings[0].message, "overlaps the next cue by 100 ms");
        assert!(r.has_errors());
        // Counted in the frames of the rate given: 2 frames at 30000/1001 are 66.7 ms.
        let ntsc = [cue(0, 1001, &["One."]), cue(1068, 2002, &["Two."])];
        let fr = FrameRate::new(30000, 1001).unwrap();
        assert!(check(&ntsc, &QcStyle::netflix_en(), fr).findings.is_empty());
    }

    #[test]
    fn short_gaps_are_chained_to_the_frame_minimum() {
        let closed = [cue(0, 1000, &["One."]), cue(1080, 2000, &["Two."])];
        assert!(!breaks(Rule::Chaining, &closed));
        let open = [cue(0, 1000, &["One."]), cue(1400, 2400, &["Two."])];
        assert_eq!(
            broken(&open, &QcStyle::netflix_en()),
            vec![(Rule::Chaining, 0)]
        );
        // Over half a second is a real pause, left open.
        let pause = [cue(0, 1000, &["One."]), cue(1600, 2600, &["Two."])];
        assert!(!breaks(Rule::Chaining, &pause));
    }

    #[test]
    fn lines_ending_in_a_weak_word_are_flagged_unless_punctuated() {
        let good = cue(0, 4000, &["We walked all the way", "to the station."]);
        assert!(!breaks(Rule::WeakLineEnd, &[good]));
        let punctuated = cue(0, 4000, &["That is what we talked about.", "And I."]);
        assert!(!breaks(Rule::WeakLineEnd, &[punctuated]));
        let bad = cue(0, 4000, &["We walked all the way to the", "station and"]);
        let r = check(&[bad], &QcStyle::netflix_en(), FrameRate::FPS_25);
        let msgs: Vec<&str> = r
            .findings
            .iter()
            .filter(|f| f.rule == Rule::WeakLineEnd)
            .map(|f| f.message.as_str())
            .collect();
        assert_eq!(msgs, ["line 1 ends in \"the\"", "line 2 ends in \"and\""]);
        assert_eq!(r.summary.percent(Rule::WeakLineEnd), 100.0);
    }

    #[test]
    fn a_one_word_line_is_an_orphan_but_a_dialogue_turn_is_not() {
        let orphan = cue(
            0,
            3000,
            &["We went all the way down to the river then", "swam."],
        );
        assert_eq!(
            broken(&[orphan], &QcStyle::netflix_en()),
            vec![(Rule::OneWordLine, 0)]
        );
        let dialogue = cue(
            0,
            3000,
            &["\u{2014}Are you coming with us?", "\u{2014}Yes."],
        );
        assert!(broken(&[dialogue], &QcStyle::netflix_en()).is_empty());
    }

    #[test]
    fn two_lines_for_text_that_fits_on_one_are_needless() {
        let needless = cue(0, 3000, &["It fits on one", "line easily."]);
        assert_eq!(
            broken(&[needless], &QcStyle::netflix_en()),
            vec![(Rule::NeedlessLines, 0)]
        );
        let needed = cue(
            0,
            4000,
            &[
                "This text is long enough that it does",
                "not fit on one line.",
            ],
        );
        assert!(!breaks(Rule::NeedlessLines, &[needed]));
        let dialogue = cue(0, 3000, &["\u{2014}Coming?", "\u{2014}Yes, wait."]);
        assert!(!breaks(Rule::NeedlessLines, &[dialogue]));
    }

    #[test]
    fn sentences_should_end_at_the_end_of_a_cue() {
        let inside = cue(
            0,
            3000,
            &["Yes. I know exactly what you", "are trying to say. Really."],
        );
        let r = check(&[inside], &QcStyle::netflix_en(), FrameRate::FPS_25);
        assert_eq!(r.summary.sentence_ends, 3);
        // Two sentence ends inside, one finding for the cue.
        assert_eq!(r.summary.count(Rule::SentenceInside), 2);
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].message, "2 sentences end inside the cue");
        // Dialogue turns, an abbreviation and a trailing ellipsis are not sentence ends inside.
        let fine = [
            cue(0, 3000, &["\u{2014}Are you coming?", "\u{2014}Yes."]),
            cue(3080, 6000, &["Mr. Smith said so...", "and left."]),
        ];
        let r = check(&fine, &QcStyle::netflix_en(), FrameRate::FPS_25);
        assert_eq!(r.summary.sentence_ends, 3);
        assert_eq!(r.summary.count(Rule::SentenceInside), 0);
    }

    #[test]
    fn silence_between_words_or_after_speech_is_not_bridged() {
        let style = QcStyle::from_settings(&Settings::default(), &[]);
        // Words 2.5 s apart in one cue.
        let gap = cue_words(0, 4000, &[("Hello", 0, 500), ("again.", 3000, 4000)]);
        assert_eq!(broken(&[gap], &style), vec![(Rule::SilenceBridged, 0)]);
        // Speech ends at 1 s; "Hi there." (9 characters) needs 0.53 s at 17 per second and a
        // flash needs 0.833 s, so 1.04 s (one frame of snapping) is the most it needs.
        let fine = cue_words(0, 1040, &[("Hi", 0, 400), ("there.", 450, 1000)]);
        assert!(broken(&[fine], &style).is_empty());
        let hangs = cue_words(0, 2000, &[("Hi", 0, 400), ("there.", 450, 1000)]);
        assert_eq!(broken(&[hangs], &style), vec![(Rule::SilenceBridged, 0)]);
        // Reading pace may need the silence: 39 characters need 2.30 s at 17 per second.
        let long = cue_words(
            0,
            2320,
            &[
                ("Fortyish", 0, 300),
                ("characters", 300, 600),
                ("spoken", 600, 800),
                ("quickly.....", 800, 1000),
            ],
        );
        assert!(broken(&[long], &style)
            .iter()
            .all(|&(r, _)| r != Rule::SilenceBridged));
        // Chaining to the next cue within 0.5 s is not a bridge either.
        let chained = [
            cue_words(0, 1360, &[("Hi", 0, 400), ("there.", 450, 1000)]),
            cue_words(1480, 2400, &[("Hello.", 1480, 2400)]),
        ];
        assert!(broken(&chained, &style).is_empty());
        // Cues read from a file have no words: the rule is silent.
        assert!(broken(&[cue(0, 6000, &["Hi."])], &style).is_empty());
    }

    #[test]
    fn the_settings_style_follows_the_job_settings() {
        let audiogram = Settings {
            subtitle_mode: SubtitleMode::Audiogram,
            ..Settings::default()
        };
        let s = QcStyle::from_settings(&audiogram, &[]);
        assert_eq!(
            (s.max_chars_per_line, s.max_lines, s.max_cps),
            (20, 1, None)
        );
        assert_eq!(
            (s.min_duration, s.long_silence),
            (Millis::ZERO, Millis(300))
        );
        let dramatic = Settings {
            content_profile: ContentProfile::Dramatic,
            max_chars_per_line: 37,
            min_frames_between_subtitles: 0,
            ..Settings::default()
        };
        let s = QcStyle::from_settings(&dramatic, &[]);
        assert_eq!(
            (s.max_chars_per_line, s.max_cps, s.min_gap_frames),
            (37, Some(15), 0)
        );
        // auto resolved from the words' own speech rate, as the layout does: 24 characters in a
        // second of speech is dense.
        let fast: Vec<Word> = (0..10)
            .map(|i| {
                Word::new(
                    "abcdefghijklmnopqrstuvw",
                    Millis(i * 1000),
                    Millis(i * 1000 + 1000),
                    0,
                )
            })
            .collect();
        let auto = Settings {
            content_profile: ContentProfile::Auto,
            ..Settings::default()
        };
        assert_eq!(QcStyle::from_settings(&auto, &fast).max_cps, Some(20));
        assert_eq!(QcStyle::from_settings(&auto, &[]).max_cps, Some(17));
    }

    #[test]
    fn rule_ids_are_stable_and_levels_split_hard_limits_from_style() {
        let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(
            ids,
            [
                "reading-pace",
                "line-length",
                "line-count",
                "duration-short",
                "duration-long",
                "gap",
                "chaining",
                "weak-line-end",
                "one-word-line",
                "needless-lines",
                "sentence-inside",
                "silence-bridged",
                "shot-change-in",
                "shot-change-out"
            ]
        );
        let errors: Vec<Rule> = Rule::ALL
            .into_iter()
            .filter(|r| r.level() == Level::Error)
            .collect();
        assert_eq!(
            errors,
            [
                Rule::LineLength,
                Rule::LineCount,
                Rule::DurationLong,
                Rule::Gap
            ]
        );
        for (n, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(*r as usize, n);
        }
    }

    #[test]
    fn laid_out_cues_keep_the_hard_limits_of_their_own_settings() {
        let words: Vec<Word> = "so we started the company in a garage and for the first two years \
            nobody would take our calls. then one afternoon a buyer from a large chain walked in, \
            looked around and asked whether we could make ten thousand units by spring."
            .split(' ')
            .enumerate()
            .map(|(i, t)| Word::new(t, Millis(i as i64 * 280), Millis(i as i64 * 280 + 240), 0))
            .collect();
        for settings in [
            Settings::default(),
            Settings {
                max_chars_per_line: 20,
                ..Settings::default()
            },
            Settings {
                subtitle_mode: SubtitleMode::Audiogram,
                ..Settings::default()
            },
        ] {
            let cues = crate::layout(&words, &settings, FrameRate::FPS_25);
            let style = QcStyle::from_settings(&settings, &words);
            let r = check(&cues, &style, FrameRate::FPS_25);
            assert!(!r.has_errors(), "{settings:?}: {:?}", r.findings);
            assert_eq!(r.summary.cues, cues.len());
        }
    }

    /// Cues of one word each from `(text, start, end)`, one cue per group.
    fn cues_of(groups: &[&[(&str, i64, i64)]]) -> Vec<Cue> {
        groups
            .iter()
            .map(|g| cue_words(g[0].1, g.last().unwrap().2, g))
            .collect()
    }

    #[test]
    fn the_pace_floor_finds_the_better_cut_of_the_same_words() {
        let style = QcStyle::from_settings(&Settings::default(), &[]);
        // Four words; cut 3 + 1 the first cue (33 characters) has 1.9 s until the last word,
        // under the 17 per second it needs; cut 2 + 2 both halves have time enough.
        let words = [
            ("Everything", 0, 500),
            ("considered,", 500, 1000),
            ("honestly", 1000, 1500),
            ("yes.", 2000, 3000),
        ];
        let bad = cues_of(&[&words[..3], &words[3..]]);
        let r = check(&bad, &style, FrameRate::FPS_25);
        assert_eq!(r.summary.count(Rule::ReadingPace), 1);
        let floor = pace_floor(&bad, &style, FrameRate::FPS_25).unwrap();
        assert_eq!(floor, PaceFloor { cues: 2, over: 0 });
        // One cue for all four words has no successor to stop it: never over.
        let one = cues_of(&[&words[..]]);
        assert_eq!(pace_floor(&one, &style, FrameRate::FPS_25).unwrap().over, 0);
    }

    #[test]
    fn the_pace_floor_counts_cues_no_cut_can_save() {
        let style = QcStyle::from_settings(&Settings::default(), &[]);
        // Three long words spoken in 0.9 s, each needing its own cue: the first two must be over.
        let words = [
            ("Extraordinarily", 0, 300),
            ("incomprehensible", 300, 600),
            ("circumstances.", 600, 900),
        ];
        let cues = cues_of(&[&words[..1], &words[1..2], &words[2..]]);
        assert_eq!(
            pace_floor(&cues, &style, FrameRate::FPS_25),
            Some(PaceFloor { cues: 3, over: 2 })
        );
        // Files without words, and styles without a pace, have no floor.
        let file = [cue(0, 1000, &["Hi."])];
        assert_eq!(pace_floor(&file, &style, FrameRate::FPS_25), None);
        let audiogram = Settings {
            subtitle_mode: SubtitleMode::Audiogram,
            ..Settings::default()
        };
        let s = QcStyle::from_settings(&audiogram, &[]);
        assert_eq!(pace_floor(&cues, &s, FrameRate::FPS_25), None);
    }

    #[test]
    fn the_pace_floor_respects_line_limits_and_long_silences() {
        let settings = Settings {
            max_chars_per_line: 10,
            max_lines_per_subtitle: 1,
            ..Settings::default()
        };
        let style = QcStyle::from_settings(&settings, &[]);
        // "aaaa bbbb" fits a 10-character line, three words do not, and the 2.6 s silence
        // splits the pairs anyway: two cues can only be the two pairs, each with time enough.
        let words = [
            ("aaaa", 0, 200),
            ("bbbb", 200, 400),
            ("cccc", 3000, 3200),
            ("dddd", 3200, 3400),
        ];
        let cues = cues_of(&[&words[..2], &words[2..]]);
        assert_eq!(
            pace_floor(&cues, &style, FrameRate::FPS_25).unwrap().over,
            0
        );
        // Three cues of these words: one of the pairs must split, and a lone four-letter word
        // followed at once by the next has 0.2 s minus the gap.
        let three = cues_of(&[&words[..1], &words[1..2], &words[2..]]);
        assert_eq!(
            pace_floor(&three, &style, FrameRate::FPS_25).unwrap().over,
            1
        );
    }

    #[test]
    fn the_pace_floor_counts_the_dashes_of_a_two_speaker_cue() {
        let style = QcStyle::from_settings(&Settings::default(), &[]);
        let cps = style.max_cps.unwrap() as i64;
        let gap = FrameRate::FPS_25.frames_duration(style.min_gap_frames).0;
        // "—Coming? —Yes." is 14 characters: 12 for the words and their space, 2 for the dashes.
        // It gets the time 12 need and not 14; the other cut, "Coming?" alone, has 0.3 s less
        // the gap. So every cut into two cues has one cue over the pace.
        let avail = (12_000 + cps - 1) / cps;
        assert!(14_000 > cps * avail);
        let mut cues = cues_of(&[
            &[("Coming?", 0, 250), ("Yes.", 300, 500)],
            &[("Good.", avail + gap, avail + gap + 400)],
        ]);
        cues[0].lines = vec!["\u{2014}Coming?".into(), "\u{2014}Yes.".into()];
        cues[0].words[1].speaker = 1;
        cues[1].words[0].speaker = 1;
        let r = check(&cues, &style, FrameRate::FPS_25);
        assert_eq!(r.summary.count(Rule::ReadingPace), 1, "{:?}", r.findings);
        assert_eq!(
            pace_floor(&cues, &style, FrameRate::FPS_25),
            Some(PaceFloor { cues: 2, over: 1 })
        );
    }

    #[test]
    fn the_pace_floor_keeps_a_dashed_cue_to_whole_turns() {
        let style = QcStyle::from_settings(&Settings::default(), &[]);
        // Speaker 0's "Absolutely unbelievable." then speaker 1's "Yes." at once. Two cues: either
        // "Absolutely" / "—Unbelievable. —Yes." (under the pace, but its dashed first line opens
        // with the tail of a sentence, which no layout gives) or "Absolutely unbelievable." /
        // "Yes.", whose first cue has 1.23 s for the 24 characters that need 1.41 s.
        let words = |first: &str, second: &str, pause: i64| {
            let reply = if second.ends_with('.') { "Yes." } else { "yes" };
            let mut cues = cues_of(&[
                &[(first, 0, 450)],
                &[
                    (second, 450 + pause, 700 + pause),
                    (reply, 750 + pause, 950 + pause),
                ],
            ]);
            cues[1].words[1].speaker = 1;
            cues
        };
        let floor = |cues: &[Cue]| pace_floor(cues, &style, FrameRate::FPS_25).unwrap().over;
        assert_eq!(floor(&words("Absolutely", "unbelievable.", 600)), 1);
        // After a sentence end the dashed cue holds a whole turn: nothing is over.
        assert_eq!(floor(&words("Absolutely.", "Unbelievable.", 600)), 0);
        // Without any punctuation a pause of 0.3 s may be a sentence end (the layout guesses
        // one there); a shorter one may not.
        assert_eq!(floor(&words("absolutely", "unbelievable", 600)), 0);
        assert_eq!(floor(&words("absolutely", "unbelievable", 300)), 0);
        assert_eq!(floor(&words("absolutely", "unbelievable", 290)), 1);
    }

    /// The cues of the floor's own cutting, shown as the floor assumes: lines wrapped greedily (a
    /// two-speaker cue one dashed line per speaker), each cue from its first word's start until
    /// the frame gap before the next cue's first word, the last as long as its text needs.
    fn floor_cues(cues: &[Cue], style: &QcStyle, fr: FrameRate) -> Vec<Cue> {
        let floor = Floor::new(cues, style, fr).unwrap();
        let (_, ends) = floor.search(true).unwrap();
        let shown: Vec<&Word> = cues
            .iter()
            .flat_map(|c| c.words.iter())
            .filter(|w| !w.text.trim().is_empty())
            .collect();
        let max = style.max_chars_per_line as usize;
        let mut out = Vec::new();
        let mut lo = 0;
        for (i, &hi) in ends.iter().enumerate() {
            let ws = &shown[lo..hi];
            let text = |ws: &[&Word]| -> String {
                let t: Vec<&str> = ws.iter().map(|w| w.text.trim()).collect();
                t.join(" ")
            };
            let lines = match ws.iter().position(|w| w.speaker != ws[0].speaker) {
                Some(at) => vec![
                    format!("\u{2014}{}", text(&ws[..at])),
                    format!("\u{2014}{}", text(&ws[at..])),
                ],
                None => {
                    let mut lines: Vec<String> = vec![String::new()];
                    for w in ws {
                        let last = lines.last_mut().unwrap();
                        if last.is_empty() {
                            last.push_str(w.text.trim());
                        } else if graphemes(last) + 1 + graphemes(w.text.trim()) <= max {
                            last.push(' ');
                            last.push_str(w.text.trim());
                        } else {
                            lines.push(w.text.trim().to_string());
                        }
                    }
                    lines
                }
            };
            let start = ws[0].start + style.word_shift;
            let end = match shown.get(hi) {
                Some(next) => {
                    next.start + style.word_shift - fr.frames_duration(style.min_gap_frames)
                }
                None => {
                    let chars = lines.iter().map(|l| graphemes(l)).sum::<usize>() + lines.len() - 1;
                    let cps = style.max_cps.unwrap() as i64;
                    start + Millis((chars as i64 * 1000 + cps - 1) / cps)
                }
            };
            let mut c = Cue::from_lines(i as u32 + 1, start, end, lines);
            c.speaker = ws[0].speaker;
            c.words = ws.iter().map(|w| (*w).clone()).collect();
            out.push(c);
            lo = hi;
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// The floor is reached by a layout that keeps the hard rules: its own cutting, shown as
        /// it assumes, has no error in `check` (line length and count, gaps, duration), keeps
        /// every dashed cue to whole turns, and has exactly the floor's count of cues over the
        /// pace, for the cue count of the layout's own cues of the same dialogue.
        #[test]
        fn the_pace_floors_own_cutting_passes_the_hard_rules(
            spoken in proptest::collection::vec(
                (1usize..13, 150i64..450, 0i64..700, 0u32..8, 0u32..5), 2..48),
            punctuated in proptest::bool::ANY,
            narrow in proptest::bool::ANY,
        ) {
            let mut words = Vec::new();
            let mut at = 0;
            let mut speaker = 0;
            for (k, &(len, dur, gap, turn, end)) in spoken.iter().enumerate() {
                if turn == 0 {
                    speaker = (speaker + 1) % 3;
                }
                let mut text: String = "abcdefghijkl"[..len].to_string();
                if punctuated && (end == 0 || k + 1 == spoken.len()) {
                    text.push(if k % 2 == 0 { '.' } else { '?' });
                }
                words.push(Word::new(text, Millis(at), Millis(at + dur), speaker));
                at += dur + gap;
            }
            let settings = Settings {
                max_chars_per_line: if narrow { 20 } else { 42 },
                ..Settings::default()
            };
            let fr = FrameRate::FPS_25;
            let laid = crate::layout(&words, &settings, fr);
            let style = QcStyle::from_settings(&settings, &words);
            let floor = pace_floor(&laid, &style, fr).unwrap();
            let cues = floor_cues(&laid, &style, fr);
            proptest::prop_assert_eq!(cues.len(), laid.len());
            let report = check(&cues, &style, fr);
            proptest::prop_assert!(!report.has_errors(), "{:?}", report.findings);
            proptest::prop_assert_eq!(report.summary.count(Rule::ReadingPace), floor.over);
            let punct = words.iter().any(|w| layout::breaks_sentence(&w.text));
            for pair in cues.windows(2) {
                let (before, c) = (pair[0].words.last().unwrap(), &pair[1].words[0]);
                let two = pair[1].words.iter().any(|w| w.speaker != c.speaker);
                let ends = if punct {
                    layout::breaks_sentence(&before.text)
                } else {
                    c.start.0 - before.end.0 >= layout::PAUSE_SENTENCE_MS
                };
                proptest::prop_assert!(
                    !two || before.speaker != c.speaker || ends,
                    "cue {} opens with a sentence's tail",
                    pair[1].index
                );
            }
        }
    }
}
