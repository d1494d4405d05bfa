//! MFCC statistics per word, computed while the 16 kHz WAV streams past in one-second blocks: no
//! feature matrix is ever held, only each word's sufficient statistics (frame count, sum, sum of
//! outer products), so memory grows with the number of words, not with the recording's length.

use std::io::{self, Read};

use super::stats::{Stats, DIM};

/// Samples per second of the pipeline's WAV.
pub const RATE: usize = 16_000;
/// Frame hop: 10 ms.
pub const HOP: usize = 160;
/// Analysis window: 25 ms.
const WINDOW: usize = 400;
const FFT: usize = 512;
const MELS: usize = 24;
/// Frames quieter than this (dBFS of the frame's RMS) are pauses inside a word's span: skipped.
const SILENCE_DB: f32 = -50.0;

/// A word's span in frames (`[from, to)`), as the statistics see it.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub from: usize,
    pub to: usize,
}

/// The span of `[start, end)` seconds in frames; empty for non-finite or negative times.
pub fn span(start: f64, end: f64) -> Span {
    if !start.is_finite() || !end.is_finite() || end <= start || end <= 0.0 {
        return Span { from: 0, to: 0 };
    }
    let frames = |t: f64| ((t.max(0.0) * RATE as f64) / HOP as f64).round().min(1e12) as usize;
    Span {
        from: frames(start),
        to: frames(end),
    }
}

/// Reads the header of a 16-bit PCM WAV up to its `data` chunk; the number of channels and the
/// data's length in bytes (the rest of the file when the header says more).
pub fn wav_header(r: &mut impl Read) -> io::Result<(usize, u64)> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut riff = [0u8; 12];
    r.read_exact(&mut riff)?;
    if &riff[0..4] != b"RIFF" || &riff[8..12] != b"WAVE" {
        return Err(bad("not a WAV file"));
    }
    let mut channels = 0usize;
    loop {
        let mut head = [0u8; 8];
        r.read_exact(&mut head)?;
        let size = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
        match &head[0..4] {
            b"fmt " => {
                let mut fmt = vec![0u8; size.min(1024) as usize];
                r.read_exact(&mut fmt)?;
                io::copy(&mut r.take(size.saturating_sub(1024)), &mut io::sink())?;
                if fmt.len() < 16 {
                    return Err(bad("short fmt chunk"));
                }
                channels = u16::from_le_bytes([fmt[2], fmt[3]]) as usize;
                let rate = u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]) as usize;
                let bits = u16::from_le_bytes([fmt[14], fmt[15]]);
                if rate != RATE || bits != 16 || channels == 0 {
                    return Err(bad("not 16 kHz 16-bit PCM"));
                }
            }
            b"data" => {
                if channels == 0 {
                    return Err(bad("data before fmt"));
                }
                return Ok((channels, size));
            }
            _ => {
                io::copy(&mut r.take(size + (size & 1)), &mut io::sink())?;
            }
        }
    }
}

/// Streams frames of mono 16-bit samples from `r` (at most `bytes`), calling `frame(index,
/// samples)` for every 25 ms window at a 10 ms hop. Holds one second of samples at a time.
pub fn frames(
    r: &mut impl Read,
    bytes: u64,
    mut frame: impl FnMut(usize, &[f32]),
) -> io::Result<()> {
    let mut r = r.take(bytes);
    let mut raw = vec![0u8; RATE * 2];
    let mut buf: Vec<f32> = Vec::with_capacity(RATE + WINDOW);
    let mut index = 0usize;
    let mut pending = 0usize; // an odd byte carried over
    loop {
        let n = r.read(&mut raw[pending..])?;
        if n == 0 {
            break;
        }
        let have = pending + n;
        let whole = have / 2 * 2;
        for c in raw[..whole].chunks_exact(2) {
            buf.push(i16::from_le_bytes([c[0], c[1]]) as f32 / 32768.0);
        }
        raw.copy_within(whole..have, 0);
        pending = have - whole;
        let mut at = 0;
        while at + WINDOW <= buf.len() {
            frame(index, &buf[at..at + WINDOW]);
            index += 1;
            at += HOP;
        }
        buf.drain(..at);
    }
    Ok(())
}

/// MFCC c1..c12 of frames (pre-emphasis, Hamming window, 512-point FFT, 24 mel bands 100-3800 Hz,
/// log, DCT-II), or `None` for a frame below [`SILENCE_DB`].
pub struct Mfcc {
    window: Vec<f32>,
    bank: Vec<Vec<(usize, f32)>>,
    dct: Vec<[f32; MELS]>,
    twiddles: Vec<(f32, f32)>,
    re: Vec<f32>,
    im: Vec<f32>,
}

impl Default for Mfcc {
    fn default() -> Self {
        Self::new()
    }
}

impl Mfcc {
    pub fn new() -> Mfcc {
        let window = (0..WINDOW)
            .map(|i| {
                0.54 - 0.46 * (2.0 * std::f32::consts::PI * i as f32 / (WINDOW - 1) as f32).cos()
            })
            .collect();
        let mel = |f: f32| 2595.0 * (1.0 + f / 700.0).log10();
        let hz = |m: f32| 700.0 * (10f32.powf(m / 2595.0) - 1.0);
        let (lo, hi) = (mel(100.0), mel(3800.0));
        let points: Vec<f32> = (0..MELS + 2)
            .map(|i| hz(lo + (hi - lo) * i as f32 / (MELS + 1) as f32) * FFT as f32 / RATE as f32)
            .collect();
        let bank = (0..MELS)
            .map(|m| {
                let (a, b, c) = (points[m], points[m + 1], points[m + 2]);
                (a.floor() as usize..=c.ceil() as usize)
                    .filter_map(|k| {
                        let f = k as f32;
                        let w = if f < a || f > c {
                            0.0
                        } else if f <= b {
                            (f - a) / (b - a).max(1e-6)
                        } else {
                            (c - f) / (c - b).max(1e-6)
                        };
                        (w > 0.0 && k <= FFT / 2).then_some((k, w))
                    })
                    .collect()
            })
            .collect();
        let dct = (1..=DIM)
            .map(|q| {
                let mut row = [0f32; MELS];
                for (m, v) in row.iter_mut().enumerate() {
                    *v = (std::f32::consts::PI * q as f32 * (m as f32 + 0.5) / MELS as f32).cos();
                }
                row
            })
            .collect();
        Mfcc {
            window,
            bank,
            dct,
            twiddles: twiddles(FFT),
            re: vec![0.0; FFT],
            im: vec![0.0; FFT],
        }
    }

    /// The coefficients of one frame of [`WINDOW`] samples, or `None` when it is silent.
    pub fn frame(&mut self, samples: &[f32]) -> Option<[f64; DIM]> {
        let energy = samples.iter().map(|x| x * x).sum::<f32>() / samples.len().max(1) as f32;
        if 10.0 * energy.max(1e-12).log10() < SILENCE_DB {
            return None;
        }
        self.re.iter_mut().for_each(|v| *v = 0.0);
        self.im.iter_mut().for_each(|v| *v = 0.0);
        let mut prev = samples.first().copied().unwrap_or(0.0);
        for (i, (&x, &w)) in samples.iter().zip(&self.window).enumerate() {
            let y = if i == 0 { x } else { x - 0.97 * prev };
            prev = x;
            self.re[i] = y * w;
        }
        fft(&mut self.re, &mut self.im, &self.twiddles);
        let mut logs = [0f32; MELS];
        for (m, filter) in self.bank.iter().enumerate() {
            let e: f32 = filter
                .iter()
                .map(|&(k, w)| w * (self.re[k] * self.re[k] + self.im[k] * self.im[k]))
                .sum();
            logs[m] = e.max(1e-10).ln();
        }
        let mut out = [0f64; DIM];
        for (o, row) in out.iter_mut().zip(&self.dct) {
            *o = row.iter().zip(&logs).map(|(a, b)| a * b).sum::<f32>() as f64;
        }
        Some(out)
    }
}

/// The FFT's twiddle factors `(sin, cos)` of every stage in turn (stage `len`: `len / 2` of them,
/// `n - 1` in all), computed once per [`Mfcc`] rather than once per butterfly (the sines and
/// cosines were most of the diarization's time); the same values as computing them in place.
fn twiddles(n: usize) -> Vec<(f32, f32)> {
    let mut out = Vec::with_capacity(n);
    let mut len = 2;
    while len <= n {
        let angle = -2.0 * std::f32::consts::PI / len as f32;
        out.extend((0..len / 2).map(|k| (angle * k as f32).sin_cos()));
        len <<= 1;
    }
    out
}

/// In-place iterative radix-2 FFT; `re.len()` is a power of two and `twiddles` its
/// [`twiddles`].
fn fft(re: &mut [f32], im: &mut [f32], twiddles: &[(f32, f32)]) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let mut len = 2;
    let mut stage = twiddles;
    while len <= n {
        let (these, rest) = stage.split_at((len / 2).min(stage.len()));
        stage = rest;
        for start in (0..n).step_by(len) {
            for (k, &(s, c)) in these.iter().enumerate() {
                let (a, b) = (start + k, start + k + len / 2);
                let tr = re[b] * c - im[b] * s;
                let ti = re[b] * s + im[b] * c;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        len <<= 1;
    }
}

/// What the diarization hears of the WAV: each word's statistics and the background's before it.
pub struct Heard {
    /// Each word's statistics (frames in its span).
    pub words: Vec<Stats>,
    /// The background in the pause before each word: frames in no word's span, at most
    /// [`GAP`] of them before the word's start (music or noise under the speech; empty in
    /// silence, whose frames are skipped).
    pub gaps: Vec<Stats>,
}

/// The background before a word: at most this many frames (1 s) before its start,
const GAP: usize = 100;
/// in a pause of at least this many frames (0.6 s: room for the tail below and some background),
const PAUSE_FRAMES: usize = 60;
/// this many frames after the word before (0.4 s: a recognizer's word often ends that long
/// before its sound does, so nearer frames hold the voice's tail, not the background),
const TAIL: usize = 40;
/// and this many frames before the word after (its onset).
const EDGE: usize = 5;

/// Each word's statistics and the background before it ([`Heard`]): one pass over the WAV at `r`
/// (its data of `bytes`, mono), the frames whose centre falls inside a word's span added to that
/// word (the first, when spans overlap), the frames of a pause to the background of the word
/// after it.
pub fn word_stats(r: &mut impl Read, bytes: u64, spans: &[Span]) -> io::Result<Heard> {
    let mut stats = vec![Stats::default(); spans.len()];
    let mut gaps = vec![Stats::default(); spans.len()];
    // Words in order of start, walked with the frames.
    let mut order: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].to > spans[i].from)
        .collect();
    order.sort_by_key(|&i| (spans[i].from, i));
    let mut mfcc = Mfcc::new();
    let mut next = 0usize;
    let mut open: Vec<usize> = Vec::new();
    // The end of the words started so far (a pause runs from here to the next word's start).
    let mut reach = 0usize;
    frames(r, bytes, |index, samples| {
        // The frame's centre is 12.5 ms after its start: frame `index` belongs to a word whose
        // span holds `index`.
        while next < order.len() && spans[order[next]].from <= index {
            open.push(order[next]);
            reach = reach.max(spans[order[next]].to);
            next += 1;
        }
        open.retain(|&w| spans[w].to > index);
        let into = match open.first() {
            Some(&word) => Some(&mut stats[word]),
            // In a pause before the next word, away from both words' edges and within GAP
            // frames of its start: the background.
            None => order
                .get(next)
                .filter(|&&w| {
                    let from = spans[w].from;
                    from >= reach + PAUSE_FRAMES
                        && index >= reach + TAIL
                        && index + EDGE < from
                        && index + GAP >= from
                })
                .map(|&w| &mut gaps[w]),
        };
        if let Some(s) = into {
            if let Some(x) = mfcc.frame(samples) {
                s.add(&x);
            }
        }
    })?;
    Ok(Heard { words: stats, gaps })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fft_of_a_cosine_has_its_energy_in_its_bin() {
        let mut re: Vec<f32> = (0..64)
            .map(|i| (2.0 * std::f32::consts::PI * 5.0 * i as f32 / 64.0).cos())
            .collect();
        let mut im = vec![0.0; 64];
        fft(&mut re, &mut im, &twiddles(64));
        let power: Vec<f32> = re.iter().zip(&im).map(|(a, b)| a * a + b * b).collect();
        assert!((power[5] - 1024.0).abs() < 1.0, "{}", power[5]);
        assert!(power[7] < 1e-3);
    }

    #[test]
    fn the_fft_of_a_frame_equals_the_direct_transform() {
        let n = FFT;
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 % 613) as f32 / 613.0 - 0.5) * (1.0 + (i as f32 / 40.0).sin()))
            .collect();
        let (mut re, mut im) = (x.clone(), vec![0.0; n]);
        fft(&mut re, &mut im, &twiddles(n));
        for k in [0, 1, 5, 63, 64, 200, 255, 256, 300, 511] {
            let (mut dr, mut di) = (0f64, 0f64);
            for (t, &v) in x.iter().enumerate() {
                let a = -2.0 * std::f64::consts::PI * (k * t % n) as f64 / n as f64;
                dr += v as f64 * a.cos();
                di += v as f64 * a.sin();
            }
            assert!(
                (re[k] as f64 - dr).abs() < 1e-3,
                "bin {k}: {} vs {dr}",
                re[k]
            );
            assert!(
                (im[k] as f64 - di).abs() < 1e-3,
                "bin {k}: {} vs {di}",
                im[k]
            );
        }
    }

    #[test]
    fn frames_come_every_ten_milliseconds_whatever_the_read_size() {
        let samples: Vec<u8> = (0..RATE * 3 + 77)
            .flat_map(|i| ((i % 300) as i16 * 50).to_le_bytes())
            .collect();
        let mut count = 0;
        let mut last = None;
        frames(&mut &samples[..], samples.len() as u64, |i, s| {
            assert_eq!(s.len(), WINDOW);
            assert_eq!(i, count);
            count += 1;
            last = Some(s[0]);
        })
        .unwrap();
        assert_eq!(count, (RATE * 3 + 77 - WINDOW) / HOP + 1);
        assert!(last.is_some());
    }
}
