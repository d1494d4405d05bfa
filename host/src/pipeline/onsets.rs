//! Word times refined against the sound (issue 24): the start of a word after a pause moves to
//! the speech onset found in the audio near the recognizer's time, and the end of a word before a
//! pause to the speech offset. Whisper puts the first word after a pause 140-190 ms before its
//! sound and often ends the last word before a pause early; cue in- and out-times follow the
//! words, so this is what puts them on the first and last frame of speech.
//!
//! The onset finder is a two-threshold energy detector on 10 ms windows at a 5 ms hop. Its quiet
//! level is that of the pause itself: a low percentile of the windows between the recognizer's
//! end of the word before and its start of this one, so neither a short pause nor a window full of speech
//! lifts it to the voice's level. It finds the first sound after the pause that rises
//! [`Tuning::rise_high`] dB over that level and stays there, then walks back while the energy is
//! [`Tuning::rise_low`] dB over it (the soft start of the sound). Where the sound never rises
//! clearly over the pause (music, constant noise, a pause too short to measure) the word keeps
//! the recognizer's time. The offset is the same walk from the other side, the pause then being
//! the one between the recognizer's end and the next word's start.
//!
//! Memory stays flat in the recording's length: the WAV is read by seeking, one window of about
//! a second around each word that is refined.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use cuecraft_engine::RawWord;

/// Samples a second of the pipeline's WAV.
const RATE: usize = 16_000;
/// Samples between energy windows (5 ms).
const HOP: usize = 80;
/// Samples an energy window spans (10 ms).
const WIN: usize = 160;
/// A refined word lasts at least this long (seconds).
const MIN_WORD: f64 = 0.05;
/// A pause with fewer windows than this (under 30 ms) has no level: the word keeps its time.
const MIN_GAP: usize = 5;

/// The onset finder's constants (chosen on the `tune` part of `scripts/timing-corpus`; see
/// docs/decisions/pipeline.md, "Speech onsets").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// A word at least this long (seconds) after the word before it (or the first word) has
    /// its start refined; one as long before the next (or the last word) its end.
    pub pause: f64,
    /// How far (seconds) before the recognizer's time the onset or offset is looked for.
    pub reach_back: f64,
    /// How far (seconds) after it.
    pub reach_ahead: f64,
    /// dB over the floor where the sound starts (the walk back stops below it).
    pub rise_low: f64,
    /// dB over the floor that is surely speech.
    pub rise_high: f64,
    /// The sound must peak at least this many dB over the floor, or the word keeps its time.
    pub min_rise: f64,
    /// Seconds the sound must stay over `rise_high` to count as speech (not a click).
    pub sustain: f64,
    /// The quiet level is this percentile (0-1) of the energies of the pause itself (between
    /// the word and the one before it for a start, the one after it for an end).
    pub gap_share: f64,
    /// At most this much (seconds) of a long pause next to the word is read for its level.
    pub gap_reach: f64,
    /// Sound this many dB under the loudest window near the word is not its voice (a breath,
    /// a rustle), however far over the floor: the surely-speech threshold is at least the peak
    /// less this.
    pub drop_high: f64,
    /// The walk back stops this many dB under the peak too.
    pub drop_low: f64,
    /// Seconds added to a refined end: the cue's out-time is the word's end rounded to the
    /// nearest frame, and this keeps the frame the sound ends in (up to half a frame of 23.976
    /// fps, 21 ms, earlier than the next frame boundary) under the subtitle.
    pub tail: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            pause: 0.15,
            reach_back: 0.3,
            reach_ahead: 0.8,
            rise_low: 6.0,
            rise_high: 15.0,
            min_rise: 20.0,
            sustain: 0.03,
            gap_share: 0.2,
            gap_reach: 1.0,
            drop_high: 30.0,
            drop_low: 40.0,
            tail: 0.025,
        }
    }
}

/// How many word starts and ends [`refine`] moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Refined {
    /// Starts moved.
    pub starts: usize,
    /// Ends moved.
    pub ends: usize,
}

/// Refines the times of `words` (in time order, seconds) against `wav`, the pipeline's 16 kHz
/// mono 16-bit WAV. A word's text and speaker never change, and the words stay in order: a start
/// never moves before the end of the word before it, an end never past the start of the next.
pub fn refine(wav: &Path, words: &mut [RawWord]) -> Result<Refined, String> {
    refine_with(wav, words, &Tuning::default())
}

/// [`refine`] with other constants (for tuning on the corpus: host/examples/onsets.rs).
pub fn refine_with(wav: &Path, given: &mut [RawWord], t: &Tuning) -> Result<Refined, String> {
    let file = File::open(wav).map_err(|e| format!("opening the WAV: {e}"))?;
    let mut audio = Audio::open(BufReader::with_capacity(1 << 15, file))
        .map_err(|e| format!("the WAV: {e}"))?;
    let mut done = Refined::default();
    let detected: Vec<(f64, f64)> = given.iter().map(|w| (w.start, w.end)).collect();
    let read = |audio: &mut Audio<_>, from: f64, to: f64| {
        audio
            .energies(from, to)
            .map_err(|e| format!("reading the WAV: {e}"))
    };
    // Refined on a copy: a read that fails half-way leaves every word as recognised.
    let mut words = given.to_vec();
    for i in 0..words.len() {
        let (s, e) = detected[i];
        if !(s.is_finite() && e.is_finite()) || e < s {
            continue;
        }
        let prev_end = i.checked_sub(1).map(|j| words[j].end);
        let next_start = detected.get(i + 1).map(|w| w.0);
        if i == 0 || s - detected[i - 1].1 >= t.pause {
            // The pause as recognised: from the end of the word before to this word's start
            // (the same pause, and so the same level, as that word's end is refined against).
            let before = i.checked_sub(1).map_or(0.0, |j| detected[j].1);
            let gap = (before.max(s - t.gap_reach).max(0.0), s);
            let lo = (s - t.reach_back).max(prev_end.unwrap_or(0.0)).max(0.0);
            let hi = s + t.reach_ahead;
            if hi - lo > MIN_WORD {
                let en = read(&mut audio, gap.0.min(lo), hi)?;
                if let Some(on) = onset(&en, gap, lo, t) {
                    // Never into the next word: a start that far on is the recognizer's.
                    let latest = next_start.map_or(f64::INFINITY, |n| n - MIN_WORD);
                    let on = on.min(latest);
                    if on > lo && (on - s).abs() >= 0.005 {
                        words[i].start = on;
                        words[i].end = words[i].end.max(on + MIN_WORD);
                        done.starts += 1;
                    }
                }
            }
        }
        let (s, e) = (words[i].start, words[i].end);
        if next_start.is_none_or(|n| n - detected[i].1 >= t.pause) {
            // The pause as recognised: from this word's end to the next word's start.
            let gap_end = next_start.unwrap_or(f64::INFINITY);
            let gap = (detected[i].1, gap_end.min(detected[i].1 + t.gap_reach));
            let lo = (e - t.reach_back).max(s + MIN_WORD);
            let hi = (e + t.reach_ahead).min(gap_end);
            if hi - lo > MIN_WORD {
                let en = read(&mut audio, lo, hi.max(gap.1))?;
                if let Some(off) = offset(&en, gap, lo, hi, t) {
                    let off = (off + t.tail).min(hi).max(s + MIN_WORD);
                    if (off - e).abs() >= 0.005 {
                        words[i].end = off;
                        done.ends += 1;
                    }
                }
            }
        }
    }
    given.clone_from_slice(&words);
    Ok(done)
}

/// The energies (dB) of the 10 ms windows at a 5 ms hop of a stretch of the WAV, the first
/// starting at `from` seconds.
struct Energies {
    from: f64,
    db: Vec<f64>,
}

impl Energies {
    fn of(from: f64, x: &[i16]) -> Energies {
        let db = if x.len() < WIN {
            Vec::new()
        } else {
            (0..=(x.len() - WIN) / HOP)
                .map(|k| {
                    let w = &x[k * HOP..k * HOP + WIN];
                    let p =
                        w.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / WIN as f64;
                    10.0 * (p / (32768.0 * 32768.0) + 1e-12).log10()
                })
                .collect()
        };
        Energies { from, db }
    }

    /// Seconds of the middle of window `k`.
    fn time(&self, k: usize) -> f64 {
        self.from + (k * HOP + WIN / 2) as f64 / RATE as f64
    }

    /// The windows that lie wholly between `a` and `b` seconds.
    fn span(&self, a: f64, b: f64) -> std::ops::Range<usize> {
        let hop = HOP as f64 / RATE as f64;
        let win = WIN as f64 / RATE as f64;
        let first = ((a - self.from) / hop - 1e-9).ceil().max(0.0) as usize;
        let end = ((b - win - self.from) / hop + 1e-9).floor() + 1.0;
        let end = (end.max(0.0) as usize).min(self.db.len());
        first.min(end)..end
    }

    /// The quiet level of the pause from `a` to `b` seconds: the [`Tuning::gap_share`]
    /// percentile of its windows, `None` when the pause holds under [`MIN_GAP`] of them.
    fn quiet(&self, a: f64, b: f64, t: &Tuning) -> Option<f64> {
        let mut gap = self.db[self.span(a, b)].to_vec();
        if gap.len() < MIN_GAP {
            return None;
        }
        gap.sort_by(f64::total_cmp);
        Some(gap[((gap.len() as f64 * t.gap_share) as usize).min(gap.len() - 1)])
    }
}

/// The two thresholds (where the sound starts, what is surely speech) over the pause's level
/// `floor` for sound peaking at `peak`, or `None` when it never rises `min_rise` dB over it.
fn thresholds(floor: f64, peak: f64, t: &Tuning) -> Option<(f64, f64)> {
    if peak - floor < t.min_rise {
        return None;
    }
    Some((
        (floor + t.rise_low).max(peak - t.drop_low),
        (floor + t.rise_high).max(peak - t.drop_high),
    ))
}

/// The window in `en` where the first speech after a quiet stretch starts (`en` in the order of
/// the search: time order for an onset, reversed for an offset).
fn first_speech(en: &[f64], low: f64, high: f64, t: &Tuning) -> Option<usize> {
    let need = ((t.sustain * RATE as f64) as usize / HOP).max(1);
    let quiet = en.iter().position(|&v| v < low)?;
    let mut k = quiet;
    while k < en.len() {
        if en[k] >= high {
            let run = en[k..]
                .iter()
                .take(need)
                .take_while(|&&v| v >= high)
                .count();
            if run >= need || k + run == en.len() {
                break;
            }
        }
        k += 1;
    }
    if k >= en.len() {
        return None;
    }
    while k > quiet && en[k - 1] >= low {
        k -= 1;
    }
    Some(k)
}

/// Seconds where speech starts after the pause `gap`, looked for from `lo` to the end of `en`.
fn onset(en: &Energies, gap: (f64, f64), lo: f64, t: &Tuning) -> Option<f64> {
    let floor = en.quiet(gap.0, gap.1, t)?;
    let search = en.span(lo, f64::INFINITY);
    let x = &en.db[search.clone()];
    let peak = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (low, high) = thresholds(floor, peak, t)?;
    first_speech(x, low, high, t).map(|k| en.time(search.start + k))
}

/// Seconds where speech ends before the pause `gap`, looked for from `lo` to `hi`.
fn offset(en: &Energies, gap: (f64, f64), lo: f64, hi: f64, t: &Tuning) -> Option<f64> {
    let floor = en.quiet(gap.0, gap.1, t)?;
    let search = en.span(lo, hi);
    let mut x = en.db[search.clone()].to_vec();
    x.reverse();
    let peak = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (low, high) = thresholds(floor, peak, t)?;
    first_speech(&x, low, high, t).map(|k| en.time(search.end - 1 - k))
}

/// The data of a 16 kHz mono 16-bit WAV, read a window at a time.
struct Audio<R> {
    r: R,
    /// Byte offset of the first sample.
    data: u64,
    /// Samples in the file.
    len: u64,
}

impl<R: Read + Seek> Audio<R> {
    fn open(mut r: R) -> io::Result<Audio<R>> {
        // The header as the speakers' features read it (16 kHz 16-bit PCM), then mono only.
        let (channels, size) = super::speakers::wav_header(&mut r)?;
        if channels != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not 16 kHz mono 16-bit PCM",
            ));
        }
        let at = r.stream_position()?;
        let end = r.seek(SeekFrom::End(0))?;
        // ffmpeg writing to a pipe leaves the size unknown (0 or all ones): the file's length
        // says it.
        let size = if size == 0 || size == u64::from(u32::MAX) {
            end.saturating_sub(at)
        } else {
            size.min(end.saturating_sub(at))
        };
        Ok(Audio {
            r,
            data: at,
            len: size / 2,
        })
    }

    /// The samples from `from` to `to` seconds (clipped to the file).
    fn window(&mut self, from: f64, to: f64) -> io::Result<Vec<i16>> {
        let a = ((from.max(0.0) * RATE as f64) as u64).min(self.len);
        let b = ((to.max(0.0) * RATE as f64) as u64).min(self.len).max(a);
        self.r.seek(SeekFrom::Start(self.data + 2 * a))?;
        let mut bytes = vec![0u8; 2 * (b - a) as usize];
        self.r.read_exact(&mut bytes)?;
        Ok(bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    /// The energies of the windows from `from` to `to` seconds (clipped to the file).
    fn energies(&mut self, from: f64, to: f64) -> io::Result<Energies> {
        let from = from.max(0.0);
        let x = self.window(from, to)?;
        // The first sample read is the one at or after `from`.
        let first = ((from * RATE as f64) as u64).min(self.len);
        Ok(Energies::of(first as f64 / RATE as f64, &x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuecraft_engine::{layout, words_from_raw, FrameRate, Settings};

    /// A 16 kHz mono WAV of `seconds` of noise at `noise_db` dBFS with a tone (a vowel's
    /// harmonics) at -20 dBFS from `on` to `off` seconds, and `extra` sounds (from, to, dBFS).
    fn wav(
        dir: &Path,
        seconds: f64,
        noise_db: f64,
        tones: &[(f64, f64)],
        extra: &[(f64, f64, f64)],
    ) -> std::path::PathBuf {
        let n = (seconds * RATE as f64) as usize;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut noise = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let amp = |db: f64| 32768.0 * 10f64.powf(db / 20.0);
        let samples: Vec<i16> = (0..n)
            .map(|i| {
                let t = i as f64 / RATE as f64;
                // Uniform noise: RMS is the amplitude / sqrt(3).
                let mut v = noise() * amp(noise_db) * 3f64.sqrt();
                for &(a, b) in tones {
                    if (a..b).contains(&t) {
                        let ph = 2.0 * std::f64::consts::PI * t;
                        v += amp(-20.0) * ((150.0 * ph).sin() + 0.5 * (450.0 * ph).sin());
                    }
                }
                for &(a, b, db) in extra {
                    if (a..b).contains(&t) {
                        v += noise() * amp(db) * 3f64.sqrt();
                    }
                }
                v.round().clamp(-32768.0, 32767.0) as i16
            })
            .collect();
        let path = dir.join("a.wav");
        let mut bytes = Vec::new();
        let data = (samples.len() * 2) as u32;
        bytes.extend_from_slice(b"RIFF");
        bytes.extend_from_slice(&(36 + data).to_le_bytes());
        bytes.extend_from_slice(b"WAVEfmt ");
        bytes.extend_from_slice(&16u32.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&(RATE as u32).to_le_bytes());
        bytes.extend_from_slice(&(RATE as u32 * 2).to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&16u16.to_le_bytes());
        bytes.extend_from_slice(b"data");
        bytes.extend_from_slice(&data.to_le_bytes());
        for s in samples {
            bytes.extend_from_slice(&s.to_le_bytes());
        }
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn word(text: &str, start: f64, end: f64) -> RawWord {
        RawWord {
            text: text.into(),
            start,
            end,
            speaker: 0,
        }
    }

    #[test]
    fn a_cue_starts_on_the_first_frame_of_a_sound_the_recognizer_placed_early() {
        let dir = tempfile::tempdir().unwrap();
        // Two "sentences" whose onsets fall at different places inside a frame.
        let (a, b) = ((1.013, 2.4), (3.537, 4.9));
        let path = wav(dir.path(), 6.0, -62.0, &[a, b], &[]);
        // Each first word 170 ms early, each last word ends 120 ms early.
        let mut words = vec![
            word("Hello", a.0 - 0.17, 1.6),
            word("there.", 1.7, a.1 - 0.12),
            word("Good", b.0 - 0.17, 4.0),
            word("morning.", 4.1, b.1 - 0.12),
        ];
        let moved = refine(&path, &mut words).unwrap();
        assert_eq!(moved, Refined { starts: 2, ends: 2 });
        for (w, t) in [(&words[0], a.0), (&words[2], b.0)] {
            assert!(
                (w.start - t).abs() < 0.012,
                "{} starts at {} not {t}",
                w.text,
                w.start
            );
        }
        for (w, t) in [(&words[1], a.1), (&words[3], b.1)] {
            let t = t + Tuning::default().tail;
            assert!(
                (w.end - t).abs() < 0.012,
                "{} ends at {} not {t}",
                w.text,
                w.end
            );
        }
        // The words in between keep the recognizer's times.
        assert_eq!((words[1].start, words[2].end), (1.7, 4.0));
        // At each frame rate, the cues start within a frame of the first frame of the sound and
        // end after its last frame.
        let ws = words_from_raw(&words).unwrap();
        for (num, den) in [(24000, 1001), (24, 1), (25, 1), (30000, 1001), (50, 1)] {
            let fr = FrameRate::new(num, den).unwrap();
            let cues = layout(&ws, &Settings::default(), fr);
            assert_eq!(cues.len(), 2, "{num}/{den}");
            for (cue, (on, off)) in cues.iter().zip([a, b]) {
                let first = (on * num as f64 / den as f64).floor() as i64;
                let last = (off * num as f64 / den as f64).floor() as i64;
                let s = fr.frame_round(cue.start);
                assert!(
                    (s - first).abs() <= 1,
                    "{num}/{den}: cue at frame {s}, sound at {first}"
                );
                assert!(
                    fr.frame_round(cue.end) > last,
                    "{num}/{den}: cue ends before the sound"
                );
            }
        }
    }

    #[test]
    fn a_breath_before_the_voice_is_not_its_start_and_a_late_start_moves_back() {
        let dir = tempfile::tempdir().unwrap();
        // A breath 38 dB under the voice (-22 dBFS) 250 ms before it.
        let path = wav(
            dir.path(),
            3.0,
            -70.0,
            &[(1.2, 2.0)],
            &[(0.95, 1.15, -60.0)],
        );
        let mut words = vec![word("Yes.", 0.98, 2.0)];
        refine(&path, &mut words).unwrap();
        assert!((words[0].start - 1.2).abs() < 0.012, "{:?}", words[0]);
        // A recognizer 150 ms late.
        let mut words = vec![word("Yes.", 1.35, 2.0)];
        refine(&path, &mut words).unwrap();
        assert!((words[0].start - 1.2).abs() < 0.012, "{:?}", words[0]);
    }

    #[test]
    fn without_a_clear_onset_words_keep_their_times() {
        let dir = tempfile::tempdir().unwrap();
        // Constant noise: no sound rises over the floor.
        let path = wav(dir.path(), 3.0, -30.0, &[], &[]);
        let given = vec![word("Hello", 0.5, 0.9), word("world.", 1.0, 1.5)];
        let mut words = given.clone();
        assert_eq!(refine(&path, &mut words).unwrap(), Refined::default());
        assert_eq!(words, given);
        // Hostile times are left alone; a file that is not a WAV changes nothing.
        let mut odd = vec![
            word("a", f64::NAN, 1.0),
            word("b", 2.0, 1.0),
            word("c", -5.0, -4.0),
        ];
        refine(&path, &mut odd).unwrap();
        assert!(odd[0].start.is_nan() && odd[1].start == 2.0 && odd[2].start == -5.0);
        std::fs::write(dir.path().join("x.wav"), b"RIFF....WAVEjunk").unwrap();
        let mut words = given.clone();
        assert!(refine(&dir.path().join("x.wav"), &mut words).is_err());
        assert_eq!(words, given);
    }

    #[test]
    fn silence_clipping_and_tiny_files_keep_times_without_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let given = vec![word("Hello", 0.5, 0.9), word("world.", 1.6, 2.0)];
        // Digital silence: every window at the same level, nothing rises over the pause.
        let silent = wav(dir.path(), 3.0, -200.0, &[], &[]);
        let mut words = given.clone();
        assert_eq!(refine(&silent, &mut words).unwrap(), Refined::default());
        assert_eq!(words, given);
        // Sound clipped at full scale from 1.5 s after digital silence: the start is found and
        // every time stays finite and in order.
        let clipped = wav(dir.path(), 3.0, -200.0, &[(1.5, 2.5)], &[(1.5, 2.5, 20.0)]);
        let mut words = given.clone();
        refine(&clipped, &mut words).unwrap();
        assert!((words[1].start - 1.5).abs() < 0.012, "{words:?}");
        for w in &words {
            assert!(
                w.start.is_finite() && w.end.is_finite() && w.start < w.end,
                "{words:?}"
            );
        }
        assert!(words[0].end <= words[1].start, "{words:?}");
        // A WAV of one sample, one of none, and words far past the end of the file.
        for seconds in [1.0 / RATE as f64, 0.0] {
            let tiny = wav(dir.path(), seconds, -30.0, &[], &[]);
            let mut words = given.clone();
            words.push(word("late", 1e9, f64::INFINITY));
            let before = words.clone();
            assert_eq!(refine(&tiny, &mut words).unwrap(), Refined::default());
            assert_eq!(words, before);
        }
    }

    #[test]
    fn refined_words_stay_in_order_between_their_neighbours() {
        let dir = tempfile::tempdir().unwrap();
        // Sound from 1.0 s; the recognizer put a short word well before it and the next word
        // right after: the start may not pass the next word's start.
        // The first word is pulled up to 50 ms before the next, which leaves the next word's
        // search 40 ms of quiet before 760 ms of sound: the level of the pause (0.5 to 0.96 s as
        // recognised) still finds its start, where a low percentile of the search window did not.
        let path = wav(dir.path(), 3.0, -62.0, &[(1.0, 2.0)], &[]);
        let mut words = vec![word("Oh", 0.3, 0.5), word("no.", 0.96, 2.0)];
        refine(&path, &mut words).unwrap();
        assert!(words[0].start < words[0].end && words[0].end <= words[1].start);
        assert!(words[0].end <= 0.96, "{words:?}");
        assert!((words[1].start - 1.0).abs() < 0.012, "{words:?}");
    }
}
