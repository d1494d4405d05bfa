//! The layout: words -> cues under every rule of design.md's layout contract.
//!
//! Four passes, each linear in the number of words:
//! 1. [`prepare`]: sort (stably, by start), trim overlaps, build each word's display text once
//!    (control characters, capitalisation, forbidden characters), count its graphemes once, and cut
//!    words longer than a line into pieces at grapheme boundaries.
//! 2. [`segment`]: choose cue boundaries. Hard boundaries (manual cue breaks, speaker changes
//!    without em dashes, sentence ends with splitOnPunctuation, long silences) cut the transcript
//!    into runs; inside a run, smart mode minimises a cost over a window bounded by the line limits
//!    (a DP over break points), greedy mode fills each cue to the limits.
//! 3. [`lines`]: break each cue into lines (balanced in smart mode) and render its text.
//! 4. [`timing`]: shift, snap to frames, extend for reading pace and minDuration, cap at
//!    maxDuration, keep N frames between cues and chain short gaps.

mod lines;
mod prepare;
mod segment;
mod timing;

use crate::{ContentProfile, Cue, FrameRate, Settings, SubtitleMode, Word};
use prepare::Texts;

/// The settings as the passes read them, with the mode-dependent numbers worked out once.
pub(crate) struct Params {
    /// Graphemes per line (audiogram: at most 20).
    max_chars: u32,
    /// Lines per cue (audiogram: 1).
    max_lines: u32,
    /// Units per cue (audiogram: 3).
    max_words: u32,
    /// Smart formatting.
    smart: bool,
    /// Two speakers may share a cue, one line each.
    dialogue: bool,
    /// `...` across cue boundaries inside a sentence.
    ellipsis: bool,
    /// The dash that opens each line of a two-speaker cue, after forbidden characters.
    dash: String,
    dash_len: u32,
    /// The continuation mark, after forbidden characters.
    ell: String,
    ell_len: u32,
    /// Reading pace, characters per second.
    cps: i64,
    /// Microseconds of reading time per character (1e6 / cps, rounded up).
    us_per_char: i64,
    /// Whether reading pace applies (not in audiogram mode).
    pace: bool,
    /// Whether cues shorter than 5/6 s are avoided (smart mode, not audiogram).
    avoid_flash: bool,
    /// A pause at least this long (ms) is as good a cue break as a sentence end.
    pause_threshold: i64,
    /// A pause at least this long (ms) always ends the cue.
    hard_pause: i64,
    /// Cost of each line beyond the first (dramatic prefers fewer lines).
    line_cost: i64,
    /// Cost of a one-word cue (low in audiogram mode, where short cues are the point).
    orphan_cost: i64,
    split_on_punctuation: bool,
    gap_frames: u32,
    /// The frame gap and one frame more, in ms: what a cue's time on screen may lose before the
    /// next cue's first word. Its start and end are snapped to the nearest frame, so it can fall
    /// short of `next word's start - gap - first word's start` by up to one frame, and reading
    /// pace is judged on the snapped times.
    room_gap: i64,
    /// Frames per millisecond and milliseconds per frame, for the segmentation's estimate of
    /// where timing will put a cue's start.
    frames_per_ms: f64,
    ms_per_frame: f64,
    /// Cost every cue end with the general walk (tests compare it with the fast walk).
    general_only: bool,
    /// Cost of each sentence that ends inside a cue: `segment::INNER_COST`, or
    /// `segment::GUESSED_INNER_COST` where sentence ends are guessed from pauses.
    inner_cost: i64,
    shift: i64,
    min_dur: i64,
    max_dur: Option<i64>,
}

/// Silence (ms) that always ends a cue outside audiogram mode: showing text through a longer
/// silence would put words on screen long before they are spoken.
const HARD_PAUSE_MS: i64 = 2000;

/// In a transcript without sentence punctuation, a silence at least this long (ms) after a word
/// is taken as a sentence end for cue breaking.
const PAUSE_SENTENCE_MS: i64 = 300;

/// Reading pace picked for `auto` from the transcript's own speech rate (characters per second
/// of speaking time, short pauses included), read straight from the words in reading order.
fn auto_cps(texts: Texts<'_>, n: usize) -> i64 {
    let mut chars: i64 = 0;
    let mut ms: i64 = 0;
    let mut prev_end: Option<i64> = None;
    for k in 0..n {
        let Some(w) = texts.words.get(texts.index(k)) else {
            continue;
        };
        let t = w.text.trim();
        if t.is_empty() {
            continue;
        }
        let start = w.start.0.max(0);
        let end = w.end.0.max(start);
        chars += prepare::measure(t).0 as i64 + 1;
        ms += end - start;
        if let Some(pe) = prev_end {
            let gap = start - pe;
            if (0..1000).contains(&gap) {
                ms += gap;
            }
        }
        prev_end = Some(end);
    }
    if ms < 1000 {
        return 17;
    }
    let rate_x10 = chars * 10_000 / ms;
    if rate_x10 >= 160 {
        20
    } else if rate_x10 <= 115 {
        15
    } else {
        17
    }
}

/// The reading pace (characters per second) `auto` picks for `words`, as [`layout`] picks it.
pub(crate) fn auto_cps_of(words: &[Word]) -> i64 {
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let order: Option<Vec<u32>> = if words.windows(2).all(|w| w[0].start <= w[1].start) {
        None
    } else {
        let mut o: Vec<u32> = (0..n as u32).collect();
        o.sort_by_key(|&i| words[i as usize].start);
        Some(o)
    };
    let texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    auto_cps(texts, n)
}

/// Units per chunk: the layout works through the transcript in chunks of this many units (ending
/// at a hard boundary or the cheapest break within the next `LOOKAHEAD` units), so its working set
/// stays in cache and its time grows linearly however long the transcript is.
const CHUNK: usize = 2048;
/// How far past `CHUNK` units the chunk may run to find a good place to end.
const LOOKAHEAD: usize = 256;

impl Params {
    fn set_cps(&mut self, cps: i64) {
        self.cps = cps.max(1);
        // Rounded up, so a cue judged readable in time is readable at exactly the pace.
        self.us_per_char = (1_000_000 + self.cps - 1) / self.cps;
    }

    fn new(s: &Settings, fr: FrameRate, forbid: Option<&prepare::Forbid>) -> Params {
        let audiogram = s.subtitle_mode == SubtitleMode::Audiogram;
        let max_chars = s.max_chars_per_line.max(1);
        let max_chars = if audiogram {
            max_chars.min(20)
        } else {
            max_chars
        };
        let max_lines = if audiogram {
            1
        } else {
            s.max_lines_per_subtitle.max(1)
        };
        let decorate = |t: &str| -> (String, u32) {
            // A replacement may hold line breaks or control characters: cleaned like word text.
            let d = forbid
                .and_then(|f| f.apply(t))
                .map(|r| prepare::clean(&r).unwrap_or(r).trim().to_string())
                .unwrap_or_else(|| t.to_string());
            let (g, _) = prepare::measure(&d);
            (d, g)
        };
        let (dash, dash_len) = decorate("\u{2014}");
        let (ell, ell_len) = decorate("...");
        let dramatic = s.content_profile == ContentProfile::Dramatic;
        Params {
            max_chars,
            max_lines,
            max_words: if audiogram { 3 } else { u32::MAX },
            smart: s.format_subtitles,
            dialogue: s.em_dash_on_speaker_change && max_lines >= 2 && !audiogram,
            ellipsis: s.ellipsis_continuation,
            dash,
            dash_len,
            ell,
            ell_len,
            cps: match s.content_profile {
                ContentProfile::Dramatic => 15,
                ContentProfile::Dense => 20,
                _ => 17,
            },
            us_per_char: 0,
            pace: !audiogram,
            avoid_flash: s.format_subtitles && !audiogram,
            pause_threshold: if audiogram {
                300
            } else if dramatic {
                400
            } else {
                700
            },
            hard_pause: if audiogram { 300 } else { HARD_PAUSE_MS },
            line_cost: if dramatic { 40 } else { 10 },
            orphan_cost: if audiogram { 40 } else { 170 },
            split_on_punctuation: s.split_on_punctuation,
            gap_frames: s.min_frames_between_subtitles,
            frames_per_ms: fr.num as f64 / (1000.0 * fr.den as f64),
            ms_per_frame: 1000.0 * fr.den as f64 / fr.num as f64,
            general_only: false,
            room_gap: fr.frames_duration(s.min_frames_between_subtitles).0,
            inner_cost: segment::INNER_COST,
            shift: s.shift_ms as i64,
            min_dur: s.min_duration.map_or(0, |m| m.0.max(0)),
            max_dur: s.max_duration.filter(|m| m.0 > 0).map(|m| m.0),
        }
    }
}

/// Lays `words` out as cues under `settings` on the grid of `frame_rate`. Pure and deterministic;
/// never panics, whatever the words (unsorted, overlapping, zero-length, empty text).
///
/// Every word with visible text appears in exactly one cue's `words`, in start order (words with
/// no visible text ride along with the cue before them); when no word has visible text there are
/// no cues. Cue times are on the frame grid, sorted, at least `minFramesBetweenSubtitles` frames
/// apart, and every cue lasts at least one frame.
pub fn layout(words: &[Word], settings: &Settings, frame_rate: FrameRate) -> Vec<Cue> {
    layout_with(words, settings, frame_rate, false)
}

/// [`layout`], with the general walk for every cue end when `general_only`.
fn layout_with(
    words: &[Word],
    settings: &Settings,
    frame_rate: FrameRate,
    general_only: bool,
) -> Vec<Cue> {
    let forbid = prepare::Forbid::new(&settings.forbidden_characters);
    let mut p = Params::new(settings, frame_rate, forbid.as_ref());
    p.general_only = general_only;
    p.set_cps(p.cps);
    // Over-long words are cut so that a piece with a `...` still fits a line.
    let reserve = if p.ellipsis { p.ell_len } else { 0 };
    let chunk_graphemes = p.max_chars.saturating_sub(reserve).max(1);
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let order: Option<Vec<u32>> = if words.windows(2).all(|w| w[0].start <= w[1].start) {
        None
    } else {
        let mut o: Vec<u32> = (0..n as u32).collect();
        // Stable: words that start together keep their input order.
        o.sort_by_key(|&i| words[i as usize].start);
        Some(o)
    };
    let word_texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    if settings.content_profile == ContentProfile::Auto {
        p.set_cps(auto_cps(word_texts, n));
    }
    let word_at = |k: usize| words.get(word_texts.index(k));
    // A transcript without any sentence punctuation (a recogniser that gives none): its
    // sentence ends are guessed from its pauses, so cues still end where sentences do.
    let pause_end = (p.smart && !prepare::any_sentence_end(words)).then_some(PAUSE_SENTENCE_MS);
    if pause_end.is_some() {
        p.inner_cost = segment::GUESSED_INNER_COST;
    }
    let mut prep = prepare::Preparer::new(prepare::PrepOptions {
        capitalise: p.smart,
        forbid: forbid.as_ref(),
        chunk: chunk_graphemes,
        pause_end,
    });
    let mut units: Vec<prepare::Unit> = Vec::with_capacity((3 * CHUNK).min(n + 1));
    let mut arena = String::new();
    let mut seg = segment::SegScratch::default();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut scratch = lines::Scratch::default();
    let mut emitter = timing::Emitter::new(&p, frame_rate, word_texts, n / 6 + 1);
    // `units[..base]` is already laid out (one unit kept as the context of the next chunk).
    let mut base = 0;
    let mut k = 0;
    loop {
        while k < n && units.len() - base <= CHUNK + LOOKAHEAD {
            if let Some(w) = word_at(k) {
                let next_start = if k + 1 < n {
                    word_at(k + 1).map(|x| x.start.0)
                } else {
                    None
                };
                prep.push(k as u32, w, next_start, &mut units, &mut arena);
            }
            k += 1;
        }
        if base >= units.len() {
            break;
        }
        let end = if k >= n {
            units.len()
        } else {
            segment::chunk_end(&p, &units, base + CHUNK, base + CHUNK + LOOKAHEAD)
        };
        segment::segment(&p, &units, (base, end), &mut seg, &mut ranges);
        let texts = Texts {
            arena: &arena,
            ..word_texts
        };
        for &(i, j) in &ranges {
            let r = lines::render(&p, &units, texts, (i, j), &mut scratch);
            let first = &units[i];
            let span = timing::Span {
                start: first.start,
                end: units[j - 1].end,
                chars: r.chars,
            };
            emitter.push(span, r.lines, first.speaker, own_from(first));
        }
        ranges.clear();
        // Keep the last laid-out unit as context, and the units not yet laid out.
        units.drain(..end - 1);
        base = 1;
        if !arena.is_empty() {
            let mut kept = String::new();
            for u in units.iter_mut().filter(|u| u.has(prepare::IN_ARENA)) {
                let t = arena.get(u.lo as usize..u.hi as usize).unwrap_or("");
                u.lo = kept.len() as u32;
                kept.push_str(t);
                u.hi = kept.len() as u32;
            }
            arena = kept;
        }
    }
    emitter.finish(n)
}

/// The first word (in reading order) a cue starting with unit `u` owns: the unit's word, or the
/// next one when the cue opens with the rest of a word cut over a cue boundary.
fn own_from(u: &prepare::Unit) -> usize {
    if u.has(prepare::FIRST_PIECE) {
        u.word as usize
    } else {
        u.word as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Break, Millis};

    /// A small deterministic generator (xorshift), so the comparison needs no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Words of `sentences`, 30 ms apart inside a sentence and `pause` ms between sentences.
    fn spoken(sentences: &[&str], pause: i64) -> Vec<Word> {
        let mut t = 0;
        let mut words = Vec::new();
        for s in sentences {
            for w in s.split(' ') {
                words.push(Word::new(w, Millis(t), Millis(t + 250), 0));
                t += 280;
            }
            t += pause - 30;
        }
        words
    }

    fn texts(cues: &[Cue]) -> Vec<String> {
        cues.iter().map(|c| c.lines.join(" / ")).collect()
    }

    #[test]
    fn unpunctuated_speech_ends_cues_at_its_pauses_without_adding_capitals() {
        let sentences = [
            "so we went home early",
            "then it rained all night",
            "nobody slept much",
        ];
        let cues = layout(
            &spoken(&sentences, 450),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        // The first word of the transcript is capitalised, as always in smart mode; the words
        // after a pause are not (no full stop was heard).
        assert_eq!(
            texts(&cues),
            [
                "So we went home early",
                "then it rained all night",
                "nobody slept much"
            ]
        );
        // Without the pauses the same words run together into one cue.
        let cues = layout(
            &spoken(&sentences, 30),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert_eq!(cues.len(), 1, "{:?}", texts(&cues));
        // With punctuation anywhere, pauses are pauses: sentence ends come from the text.
        let mut words = spoken(&sentences, 450);
        words[4] = Word::new("early.", words[4].start, words[4].end, 0);
        let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
        assert_eq!(texts(&cues)[0], "So we went home early.");
        assert!(
            texts(&cues)[1].starts_with("Then it rained"),
            "{:?}",
            texts(&cues)
        );
    }

    #[test]
    fn a_join_keeps_two_cues_together_within_the_hard_limits_only() {
        // Two sentences with a pause: two cues in smart mode, one with a join.
        let two = ["The river moved quickly.", "Then the valley flooded."];
        for smart in [true, false] {
            let settings = Settings {
                format_subtitles: smart,
                ..Settings::default()
            };
            let fr = FrameRate::FPS_25;
            let mut words = spoken(&two, 800);
            if smart {
                // (Greedy mode fills the cue to its limits: one cue already.)
                assert_eq!(layout(&words, &settings, fr).len(), 2);
            }
            words[3].break_after = Some(Break::Join);
            let cues = layout(&words, &settings, fr);
            assert_eq!(cues.len(), 1, "smart {smart}: {:?}", texts(&cues));
            assert_eq!(cues[0].words.len(), 8);
            // When both sentences do not fit one cue, the words either side of the join still
            // share one: the layout cuts elsewhere.
            let narrow = Settings {
                max_chars_per_line: 24,
                max_lines_per_subtitle: 1,
                ..settings.clone()
            };
            let cues = texts(&layout(&words, &narrow, fr));
            assert!(
                cues.iter().any(|c| c.contains("quickly. Then")),
                "smart {smart}: {cues:?}"
            );
            // When not even they fit one line, the join is cut: the limits come first.
            let tiny = Settings {
                max_chars_per_line: 10,
                max_lines_per_subtitle: 1,
                ..settings.clone()
            };
            let cues = texts(&layout(&words, &tiny, fr));
            assert!(
                cues.iter().any(|c| c.ends_with("quickly.")),
                "smart {smart}: {cues:?}"
            );
            // A long pause is a hard boundary a join does not override.
            let mut apart = spoken(&two, 2500);
            apart[3].break_after = Some(Break::Join);
            assert_eq!(layout(&apart, &settings, fr).len(), 2, "smart {smart}");
        }
    }

    #[test]
    fn a_sentence_stays_whole_for_a_hair_over_the_pace_and_gives_way_to_a_real_overrun() {
        // Two sentences `pause` ms apart, then a long silence before a third. The first sentence
        // alone (32 characters, 1.88 s at 17 a second) may stay up from its first word until
        // 3 frames before the second: 1370 + pause - 120 ms.
        let words_with = |pause: i64| {
            let mut words = spoken(&["Flooding has closed the railway."], 0);
            let mut second = spoken(&["Engineers are working."], 0);
            let mut third = spoken(&["Good night."], 0);
            let at = 1370 + pause;
            for w in &mut second {
                w.start = w.start + Millis(at);
                w.end = w.end + Millis(at);
            }
            for w in &mut third {
                w.start = w.start + Millis(at + 3300);
                w.end = w.end + Millis(at + 3300);
            }
            words.extend(second);
            words.extend(third);
            words
        };
        let layout_of = |pause| {
            texts(&layout(
                &words_with(pause),
                &Settings::default(),
                FrameRate::FPS_25,
            ))
        };
        // 620 ms: 1.87 s for 1.88 s of reading, under 1.5% short: the sentences stay apart.
        assert_eq!(
            layout_of(620),
            [
                "Flooding has closed the railway.",
                "Engineers are working.",
                "Good night."
            ]
        );
        // 500 ms: 6% short. Reading pace wins: both sentences share one cue and its time.
        assert_eq!(
            layout_of(500),
            [
                "Flooding has closed the railway. / Engineers are working.",
                "Good night."
            ]
        );
    }

    #[test]
    fn a_pause_after_a_weak_word_is_a_hesitation_not_a_sentence_end() {
        let mut words = spoken(&["we walked to the", "station in the rain"], 450);
        words.extend(spoken(&["and waited"], 0).into_iter().map(|mut w| {
            w.start = w.start + Millis(4000);
            w.end = w.end + Millis(4000);
            w
        }));
        let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
        assert_eq!(texts(&cues)[0], "We walked to the station in the rain");
    }

    #[test]
    fn the_fast_walk_chooses_the_cues_the_general_walk_chooses() {
        const VOCAB: [&str; 16] = [
            "the",
            "and",
            "river",
            "valley,",
            "moved.",
            "quickly?",
            "I",
            "of",
            "station",
            "yes!",
            "workshop",
            "a",
            "sediment;",
            "ten",
            "thousand",
            "years.",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..4000 {
            let n = 1 + rng.below(160) as usize;
            let unpunctuated = rng.below(4) == 0;
            let mut t = 0i64;
            let words: Vec<Word> = (0..n)
                .map(|_| {
                    let text = VOCAB[rng.below(VOCAB.len() as u64) as usize];
                    let text = if unpunctuated {
                        text.trim_end_matches(['.', ',', '?', '!', ';'])
                            .to_lowercase()
                    } else {
                        text.to_string()
                    };
                    t += [10, 40, 80, 250, 400, 800, 2500][rng.below(7) as usize];
                    let d = 100 + rng.below(500) as i64;
                    let mut w = Word::new(text, Millis(t), Millis(t + d), rng.below(3) as u32);
                    if rng.below(40) == 0 {
                        w.break_after =
                            Some([Break::Line, Break::Cue, Break::Join][rng.below(3) as usize]);
                    }
                    t += d;
                    w
                })
                .collect();
            let settings = Settings {
                max_chars_per_line: [12, 20, 32, 42, 60][rng.below(5) as usize],
                max_lines_per_subtitle: 1 + rng.below(3) as u32,
                content_profile: [
                    ContentProfile::Balanced,
                    ContentProfile::Dense,
                    ContentProfile::Dramatic,
                    ContentProfile::Auto,
                ][rng.below(4) as usize],
                em_dash_on_speaker_change: rng.below(3) != 0,
                split_on_punctuation: rng.below(5) == 0,
                min_duration: (rng.below(4) == 0).then_some(Millis(1500)),
                max_duration: (rng.below(4) == 0).then_some(Millis(3000)),
                min_frames_between_subtitles: rng.below(6) as u32,
                shift_ms: [0, 0, 300, -500][rng.below(4) as usize],
                subtitle_mode: if rng.below(8) == 0 {
                    SubtitleMode::Audiogram
                } else {
                    SubtitleMode::Default
                },
                ..Settings::default()
            };
            let fr = [
                FrameRate::FPS_25,
                FrameRate {
                    num: 30000,
                    den: 1001,
                },
            ][rng.below(2) as usize];
            let fast = layout_with(&words, &settings, fr, false);
            let general = layout_with(&words, &settings, fr, true);
            assert_eq!(fast, general, "case {case}: {settings:?}");
        }
    }
}
