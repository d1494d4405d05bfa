//! Speaker diarization: who speaks each recognised word, for recognizers whose words carry no
//! speakers (Whisper, pocketsphinx). Weight-free and in Rust (the reasons are in
//! docs/decisions/pipeline.md):
//!
//! - **Channel mode.** Stereo media whose two channels carry different people (one microphone
//!   per side) is labelled per word by which channel is louder over the word. It is chosen when
//!   most words are clearly louder on one side (6 dB) and both sides have words of their own.
//! - **Otherwise, by voice.** MFCC statistics per word ([`features`], streamed from the 16 kHz
//!   WAV the pipeline already extracted: memory grows with the words, never with the length);
//!   segments between change points (a pause of 0.25 s, a sentence end, and every 3 s inside long
//!   turns); agglomerative clustering with a length-normalised stopping rule and 1 to 8
//!   speakers ([`cluster`]); a Viterbi pass over the words that lets a speaker change cheaply at
//!   a pause or sentence end and dearly inside a sentence, so a one-word backchannel keeps its
//!   speaker and a stray word does not become a phantom one.
//!
//! Speakers are numbered 0, 1, 2… in order of first appearance. The caller keeps speaker 0 on
//! every word when this fails (and logs it).

mod cluster;
pub use cluster::{Tuning, MAX_SPEAKERS};
mod features;
pub(crate) use features::wav_header;
mod stats;

use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

use cuecraft_engine::RawWord;

use cluster::{Renumber, Token};
use features::{Heard, Span};
use stats::{Gaussian, Stats};

/// How the speakers were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing to label (no words).
    None,
    /// By which stereo channel is louder.
    Channel,
    /// By voice.
    Voice,
}

/// What [`label`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Speakers found (0 without words).
    pub speakers: usize,
    /// How.
    pub mode: Mode,
}

/// A pause at least this long (seconds) before a word is a change point.
const PAUSE: f64 = 0.25;
/// A segment is cut before a word that would make it longer than this (seconds).
const MAX_SEGMENT: f64 = 3.0;
/// Music: a cluster whose own model explains its words less than this much better (nats a
/// frame) than the background in the pauses around them is the accompaniment's, not a voice.
const VOICE_OVER_BACKGROUND: f64 = 3.5;
/// ... judged only with at least this many frames of background (0.5 s).
const BACKGROUND_FRAMES: f64 = 50.0;
/// Channel mode: a word belongs clearly to one side when that side is this much louder (dB).
const CHANNEL_DB: f64 = 6.0;
/// Channel mode: the share of words that must belong clearly to one side.
const CHANNEL_CLEAR: f64 = 0.8;

/// Sets the speaker of every word of `words` from the audio: `wav` is the pipeline's 16 kHz mono
/// WAV of `media` (the original upload, read again only for its channels when it is stereo).
pub fn label(wav: &Path, media: &Path, words: &mut [RawWord]) -> Result<Outcome, String> {
    label_with(wav, media, words, &Tuning::default())
}

/// [`label`] with other constants (for tuning on the corpus: host/examples/diarize.rs).
pub fn label_with(
    wav: &Path,
    media: &Path,
    words: &mut [RawWord],
    t: &Tuning,
) -> Result<Outcome, String> {
    if words.is_empty() {
        return Ok(Outcome {
            speakers: 0,
            mode: Mode::None,
        });
    }
    let spans: Vec<Span> = words
        .iter()
        .map(|w| features::span(w.start, w.end))
        .collect();
    if audio_channels(media) == Some(2) {
        match by_channel(media, &spans) {
            Ok(Some(labels)) => return Ok(apply(words, labels, Mode::Channel)),
            Ok(None) => {}
            Err(e) => tracing::warn!("channel mode unavailable, labelling by voice: {e}"),
        }
    }
    let file = std::fs::File::open(wav).map_err(|e| format!("opening the WAV: {e}"))?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let (channels, bytes) = features::wav_header(&mut r).map_err(|e| format!("the WAV: {e}"))?;
    if channels != 1 {
        return Err(format!("the WAV has {channels} channels, not 1"));
    }
    let heard =
        features::word_stats(&mut r, bytes, &spans).map_err(|e| format!("reading the WAV: {e}"))?;
    let boundaries = boundaries(words);
    let labels = by_voice(&heard, &boundaries, t, None);
    Ok(apply(words, labels, Mode::Voice))
}

/// Speakers found again with exactly `count` speakers (1 to [`cluster::MAX_SPEAKERS`]) where
/// the audio allows (fewer when there is less speech than that many voices need): the editor's
/// "Detect speakers again". `media` is a local copy of the original; its audio is decoded by
/// ffmpeg straight into the features (no WAV is written). Stereo media with one person per side
/// asked for two speakers is labelled by channel, as the pipeline does.
pub fn redetect(media: &Path, words: &mut [RawWord], count: usize) -> Result<Outcome, String> {
    let count = count.clamp(1, cluster::MAX_SPEAKERS);
    if words.is_empty() {
        return Ok(Outcome {
            speakers: 0,
            mode: Mode::None,
        });
    }
    if count == 1 {
        return Ok(apply(words, vec![0; words.len()], Mode::Voice));
    }
    let spans: Vec<Span> = words
        .iter()
        .map(|w| features::span(w.start, w.end))
        .collect();
    if count == 2 && audio_channels(media) == Some(2) {
        if let Ok(Some(labels)) = by_channel(media, &spans) {
            return Ok(apply(words, labels, Mode::Channel));
        }
    }
    let heard = mono_stats(media, &spans)?;
    let boundaries = boundaries(words);
    let labels = by_voice(&heard, &boundaries, &Tuning::default(), Some(count));
    Ok(apply(words, labels, Mode::Voice))
}

/// ffmpeg decoding `media`'s first audio stream to 16 kHz 16-bit PCM with `channels` channels on
/// its standard output (streamed by the caller, never stored).
fn pcm_stream(media: &Path, channels: u8) -> Result<std::process::Child, String> {
    let mut url = std::ffi::OsString::from("file:");
    url.push(media.as_os_str());
    crate::child::ends_with_server(
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-i"])
            .arg(url)
            .args(["-vn", "-sn", "-dn", "-map", "0:a:0", "-ac"])
            .arg(channels.to_string())
            .args(["-ar", "16000", "-f", "s16le", "-c:a", "pcm_s16le", "-"]),
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|e| format!("could not run ffmpeg: {e}"))
}

/// Each word's statistics from `media`'s first audio stream, decoded by ffmpeg to 16 kHz mono
/// and streamed into [`features::word_stats`].
fn mono_stats(media: &Path, spans: &[Span]) -> Result<Heard, String> {
    let mut child = pcm_stream(media, 1)?;
    let stats = child
        .stdout
        .take()
        .ok_or_else(|| "no ffmpeg output".to_string())
        .and_then(|out| {
            let mut r = BufReader::with_capacity(1 << 16, out);
            features::word_stats(&mut r, u64::MAX, spans)
                .map_err(|e| format!("reading ffmpeg's output: {e}"))
        });
    let status = child.wait().map_err(|e| format!("ffmpeg: {e}"))?;
    let stats = stats?;
    if !status.success() {
        return Err(format!("ffmpeg ended with {status}"));
    }
    Ok(stats)
}

fn apply(words: &mut [RawWord], labels: Vec<usize>, mode: Mode) -> Outcome {
    let labels = labels.renumbered();
    let speakers = labels.iter().max().map_or(0, |m| m + 1);
    for (w, l) in words.iter_mut().zip(labels) {
        w.speaker = l as u32;
    }
    Outcome { speakers, mode }
}

/// Whether a change point comes before each word: a pause of [`PAUSE`] or a sentence end.
fn boundaries(words: &[RawWord]) -> Vec<bool> {
    (0..words.len())
        .map(|i| {
            i > 0 && {
                let (a, b) = (&words[i - 1], &words[i]);
                let gap = b.start - a.end;
                let sentence = a
                    .text
                    .trim_end_matches(['"', '\'', ')', '”', '’'])
                    .ends_with(['.', '?', '!', '…', '。', '？', '！']);
                sentence || (gap.is_finite() && gap >= PAUSE)
            }
        })
        .collect()
}

/// Speakers by voice, one per word (numbering not yet by first appearance): as many as the
/// stopping rule finds, or `fixed` of them (as many as there are segments and speech for).
fn by_voice(heard: &Heard, boundary: &[bool], t: &Tuning, fixed: Option<usize>) -> Vec<usize> {
    let stats = &heard.words;
    let n = stats.len();
    let mut all = Stats::default();
    stats.iter().for_each(|s| all.merge(s));
    if all.n < t.min_cluster_frames {
        return vec![0; n];
    }
    let prior = all.plain_covariance();
    // Segments: runs of words between change points, cut every MAX_SEGMENT of voiced frames.
    let mut segments: Vec<(Stats, Vec<usize>)> = Vec::new();
    for i in 0..n {
        let cut = segments
            .last()
            .is_none_or(|(s, _)| boundary[i] || s.n + stats[i].n > MAX_SEGMENT * 100.0);
        if cut {
            segments.push((Stats::default(), Vec::new()));
        }
        if let Some((s, members)) = segments.last_mut() {
            s.merge(&stats[i]);
            members.push(i);
        }
    }
    let long: Vec<usize> = (0..segments.len())
        .filter(|&s| segments[s].0.n >= t.min_frames)
        .collect();
    if long.len() < 2 {
        return vec![0; n];
    }
    let items: Vec<Stats> = long.iter().map(|&s| segments[s].0.clone()).collect();
    let labels = cluster::agglomerate(&items, &prior, t, fixed);
    // Each cluster's voice, and the background in the pauses around its segments.
    let mut clusters: Vec<Stats> = Vec::new();
    let mut backgrounds: Vec<Stats> = Vec::new();
    for ((item, &l), &s) in items.iter().zip(&labels).zip(&long) {
        if clusters.len() <= l {
            clusters.resize(l + 1, Stats::default());
            backgrounds.resize(l + 1, Stats::default());
        }
        clusters[l].merge(item);
        let members = &segments[s].1;
        if let (Some(&first), Some(&last)) = (members.first(), members.last()) {
            backgrounds[l].merge(&heard.gaps[first]);
            if let Some(after) = heard.gaps.get(last + 1) {
                backgrounds[l].merge(after);
            }
        }
    }
    if fixed.is_none() {
        merge_accompaniment(&mut clusters, &mut backgrounds, &prior, t);
    }
    // A cluster with too little speech is merged into its nearest (no phantom speakers); a
    // count a person asked for is kept.
    while clusters.len() > 1 && fixed.is_none() {
        let Some(small) = (0..clusters.len())
            .filter(|&c| clusters[c].n < t.min_cluster_frames)
            .min_by(|&a, &b| clusters[a].n.total_cmp(&clusters[b].n))
        else {
            break;
        };
        let nearest = (0..clusters.len())
            .filter(|&c| c != small)
            .min_by(|&a, &b| {
                cluster::distance(&clusters[small], &clusters[a], &prior, t).total_cmp(
                    &cluster::distance(&clusters[small], &clusters[b], &prior, t),
                )
            })
            .unwrap_or(0);
        let gone = clusters.remove(small);
        let gone_background = backgrounds.remove(small);
        let into = if nearest > small {
            nearest - 1
        } else {
            nearest
        };
        clusters[into].merge(&gone);
        backgrounds[into].merge(&gone_background);
    }
    // A voice heard only in short replies, far from every cluster, becomes one.
    let mut replies_at = None;
    if fixed.is_none() && clusters.len() < cluster::MAX_SPEAKERS {
        if let Some(voice) = replies(&segments, &clusters, &prior, t) {
            clusters.push(voice);
            replies_at = Some(clusters.len() - 1);
        }
    }
    if clusters.len() < 2 {
        return vec![0; n];
    }
    let tokens: Vec<Token> = (0..n)
        .map(|i| Token {
            stats: &stats[i],
            boundary_before: boundary[i],
        })
        .collect();
    let mut labels = vec![0; n];
    // Two rounds: the clusters' models, then models re-estimated from the first round's words.
    for _ in 0..2 {
        let models: Option<Vec<Gaussian>> = clusters
            .iter()
            .map(|c| Gaussian::from(c, &prior, t.tau))
            .collect();
        let Some(models) = models else {
            break;
        };
        labels = cluster::viterbi(&tokens, &models, t);
        let mut again = vec![Stats::default(); clusters.len()];
        for (i, &l) in labels.iter().enumerate() {
            again[l].merge(&stats[i]);
        }
        let least = if fixed.is_some() {
            f64::MIN_POSITIVE
        } else {
            t.min_cluster_frames
        };
        // The replies' own floor: as many voiced frames as the fewest replies that make one.
        let floor = |c: usize| {
            if Some(c) == replies_at {
                t.min_reply_frames * t.min_replies
            } else {
                least
            }
        };
        let kept: Vec<usize> = (0..again.len())
            .filter(|&c| again[c].n >= floor(c))
            .collect();
        replies_at = replies_at.and_then(|r| kept.iter().position(|&c| c == r));
        let again: Vec<Stats> = kept.iter().map(|&c| again[c].clone()).collect();
        if again.len() < 2 {
            return vec![0; n];
        }
        if again.len() != clusters.len() {
            clusters = again;
            continue;
        }
        clusters = again;
    }
    labels
}

/// A voice heard only in short replies (one- and two-word answers, a few seconds in all) is
/// under the clusters' floor of voiced frames and would join the main voice. It is kept when its
/// replies recur and agree: the segments no cluster explains (each of at least
/// `min_reply_frames`, with a [`cluster::fit`] over `reply_fit` to every cluster), in at least
/// `min_replies` separate turns with a clustered segment between each two, and all of them
/// together still that far from every cluster. A stray sound is one turn; a voice's own odd
/// words are odd in different directions, so together they fit their voice again.
fn replies(
    segments: &[(Stats, Vec<usize>)],
    clusters: &[Stats],
    prior: &[f64; 78],
    t: &Tuning,
) -> Option<Stats> {
    let far = |s: &Stats| {
        clusters
            .iter()
            .all(|c| cluster::fit(s, c, prior, t) > t.reply_fit)
    };
    let (mut group, mut turns, mut apart) = (Stats::default(), 0usize, true);
    for (s, _) in segments {
        if s.n >= t.min_reply_frames && far(s) {
            turns += usize::from(apart);
            apart = false;
            group.merge(s);
        } else if s.n >= t.min_frames {
            apart = true;
        }
    }
    (turns as f64 >= t.min_replies && far(&group)).then_some(group)
}

/// Music: a cluster whose words the background in the pauses around them explains nearly as
/// well as the cluster's own model (less than [`VOICE_OVER_BACKGROUND`] nats a frame better, with
/// at least [`BACKGROUND_FRAMES`] of background) is the accompaniment heard through the words (a
/// song's loud chorus after a quiet verse), not a voice of its own: it joins its nearest cluster.
/// Silent pauses have no frames, so speech without music or noise is never touched; a voice over
/// steady noise is still explained far better by its own model (4 nats a frame and more on the
/// corpus's 15 dB SNR files, under 2.7 for the song in tests/speakers.rs).
fn merge_accompaniment(
    clusters: &mut Vec<Stats>,
    backgrounds: &mut Vec<Stats>,
    prior: &[f64; 78],
    t: &Tuning,
) {
    while clusters.len() > 1 {
        let gain = |c: usize| -> Option<f64> {
            if backgrounds[c].n < BACKGROUND_FRAMES {
                return None;
            }
            let own = Gaussian::from(&clusters[c], prior, t.tau)?;
            let background = Gaussian::from(&backgrounds[c], prior, t.tau)?;
            let n = clusters[c].n.max(1.0);
            Some((own.loglik(&clusters[c]) - background.loglik(&clusters[c])) / n)
        };
        let Some((_, c)) = (0..clusters.len())
            .filter_map(|c| gain(c).map(|g| (g, c)))
            .filter(|&(g, _)| g < VOICE_OVER_BACKGROUND)
            .min_by(|a, b| a.0.total_cmp(&b.0))
        else {
            return;
        };
        let nearest = (0..clusters.len())
            .filter(|&o| o != c)
            .min_by(|&a, &b| {
                cluster::distance(&clusters[c], &clusters[a], prior, t)
                    .total_cmp(&cluster::distance(&clusters[c], &clusters[b], prior, t))
            })
            .unwrap_or(0);
        let (voice, background) = (clusters.remove(c), backgrounds.remove(c));
        let into = if nearest > c { nearest - 1 } else { nearest };
        clusters[into].merge(&voice);
        backgrounds[into].merge(&background);
    }
}

/// The number of channels of the first audio stream of `media`, by ffprobe.
fn audio_channels(media: &Path) -> Option<usize> {
    let mut url = std::ffi::OsString::from("file:");
    url.push(media.as_os_str());
    let out = crate::child::ends_with_server(
        Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", "a:0"])
            .args(["-show_entries", "stream=channels", "-of", "csv=p=0"])
            .arg(url),
    )
    .stdin(Stdio::null())
    .stderr(Stdio::null())
    .output()
    .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Channel mode: each word's energy on the left and on the right (16 kHz stereo streamed from
/// ffmpeg, never stored), and the louder side per word when the channels carry different people.
fn by_channel(media: &Path, spans: &[Span]) -> Result<Option<Vec<usize>>, String> {
    let mut child = pcm_stream(media, 2)?;
    let mut energy = vec![[0f64; 2]; spans.len()];
    let read = child
        .stdout
        .take()
        .ok_or_else(|| "no ffmpeg output".to_string())
        .and_then(|out| side_energies(out, spans, &mut energy));
    let status = child.wait().map_err(|e| format!("ffmpeg: {e}"))?;
    read?;
    if !status.success() {
        return Err(format!("ffmpeg ended with {status}"));
    }
    Ok(channel_labels(&energy))
}

fn side_energies(out: impl Read, spans: &[Span], energy: &mut [[f64; 2]]) -> Result<(), String> {
    let mut r = BufReader::with_capacity(1 << 16, out);
    let mut order: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].to > spans[i].from)
        .collect();
    order.sort_by_key(|&i| (spans[i].from, i));
    let (mut next, mut open) = (0usize, Vec::<usize>::new());
    let mut buf = vec![0u8; features::HOP * 4];
    let mut frame = 0usize;
    loop {
        // One 10 ms frame of interleaved stereo samples at a time.
        let mut got = 0;
        while got < buf.len() {
            match r.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("reading ffmpeg's output: {e}")),
            }
        }
        if got == 0 {
            return Ok(());
        }
        while next < order.len() && spans[order[next]].from <= frame {
            open.push(order[next]);
            next += 1;
        }
        open.retain(|&w| spans[w].to > frame);
        if let Some(&word) = open.first() {
            for pair in buf[..got - got % 4].chunks_exact(4) {
                let l = i16::from_le_bytes([pair[0], pair[1]]) as f64;
                let rr = i16::from_le_bytes([pair[2], pair[3]]) as f64;
                energy[word][0] += l * l;
                energy[word][1] += rr * rr;
            }
        }
        frame += 1;
        if got < buf.len() {
            return Ok(());
        }
    }
}

/// The louder side per word when the channels carry different people: [`CHANNEL_CLEAR`] of the
/// words with sound are [`CHANNEL_DB`] louder on one side, and each side has at least two such
/// words and 3% of them. `None` otherwise (the same sound on both sides, or one voice panned).
fn channel_labels(energy: &[[f64; 2]]) -> Option<Vec<usize>> {
    let ratio = 10f64.powf(CHANNEL_DB / 10.0);
    let heard: Vec<&[f64; 2]> = energy.iter().filter(|e| e[0] + e[1] > 0.0).collect();
    let left = heard.iter().filter(|e| e[0] >= ratio * e[1]).count();
    let right = heard.iter().filter(|e| e[1] >= ratio * e[0]).count();
    let n = heard.len() as f64;
    let side_ok = |k: usize| k >= 2 && k as f64 >= 0.03 * n;
    if heard.is_empty()
        || ((left + right) as f64) < CHANNEL_CLEAR * n
        || !side_ok(left)
        || !side_ok(right)
    {
        return None;
    }
    // A word with no sound on either side takes the speaker of the word before it.
    let mut last = 0;
    Some(
        energy
            .iter()
            .map(|e| {
                if e[0] + e[1] > 0.0 {
                    last = usize::from(e[1] > e[0]);
                }
                last
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, start: f64, end: f64) -> RawWord {
        RawWord {
            text: text.into(),
            start,
            end,
            speaker: 0,
        }
    }

    #[test]
    fn change_points_are_sentence_ends_and_pauses() {
        let words = [
            word("Hello", 0.0, 0.4),
            word("there.", 0.45, 0.8),
            word("Right", 0.8, 1.0),
            word("so", 1.4, 1.6),
            word("then", 1.65, 1.9),
        ];
        assert_eq!(boundaries(&words), vec![false, false, true, true, false]);
    }

    /// Per-word statistics and change points of an interview: `turns` turns of the main voice
    /// (ten words of 30 voiced frames each), each followed by the reply `replies(k)` gives (the
    /// voice and voiced frames of a one-word reply), if any. Also the true voice per word.
    fn interview(
        turns: usize,
        replies: impl Fn(usize) -> Option<(usize, usize)>,
    ) -> (Vec<Stats>, Vec<bool>, Vec<usize>) {
        let (mut stats, mut boundary, mut truth) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..turns {
            for w in 0..10 {
                stats.push(stats::synthetic(0, 30, (k * 100 + w) as u64 + 1));
                boundary.push(w == 0 && k > 0);
                truth.push(0);
            }
            if let Some((voice, frames)) = replies(k) {
                stats.push(stats::synthetic(voice, frames, k as u64 + 7000));
                boundary.push(true);
                truth.push(voice);
            }
        }
        (stats, boundary, truth)
    }

    /// What the diarization hears of words in silent pauses: the words alone, no background.
    fn silent(words: &[Stats]) -> Heard {
        Heard {
            words: words.to_vec(),
            gaps: vec![Stats::default(); words.len()],
        }
    }

    #[test]
    fn a_voice_heard_only_in_short_replies_is_a_speaker_and_a_stray_sound_is_not() {
        let t = Tuning::default();
        // Five one-word replies of another voice, 0.35 s each (1.75 s in all, under the
        // clusters' floor of 4 s): a speaker of their own, every word right.
        let (stats, boundary, truth) = interview(6, |k| (k < 5).then_some((1, 35)));
        assert_eq!(by_voice(&silent(&stats), &boundary, &t, None), truth);
        // Without the rule for replies they join the main voice (under the clusters' floor).
        let without = Tuning {
            reply_fit: f64::INFINITY,
            ..t
        };
        assert_eq!(
            by_voice(&silent(&stats), &boundary, &without, None),
            vec![0; truth.len()]
        );
        // The same voice replying once, or twice: no speaker of its own.
        for times in [1, 2] {
            let (stats, boundary, _) = interview(6, |k| (k < times).then_some((1, 35)));
            assert_eq!(
                by_voice(&silent(&stats), &boundary, &t, None),
                vec![0; stats.len()]
            );
        }
        // Replies in the main voice: one speaker.
        let (stats, boundary, _) = interview(6, |k| (k < 5).then_some((0, 35)));
        assert_eq!(
            by_voice(&silent(&stats), &boundary, &t, None),
            vec![0; stats.len()]
        );
    }

    #[test]
    fn channel_mode_needs_two_sides_that_differ() {
        let loud = 1000.0;
        // One voice per side, with the other's bleed 26 dB down: each word by its side.
        let two = [
            [loud, 2.5],
            [2.5, loud],
            [loud, 2.5],
            [2.5, loud],
            [0.0, 0.0],
            [loud, 3.0],
        ];
        assert_eq!(channel_labels(&two), Some(vec![0, 1, 0, 1, 1, 0]));
        // The same sound on both sides (mono in stereo): not channel mode.
        assert_eq!(channel_labels(&[[loud, loud]; 6]), None);
        // One voice panned left: one side only, not channel mode.
        assert_eq!(channel_labels(&[[loud, 1.0]; 6]), None);
    }

    #[test]
    fn silence_and_no_words_give_one_speaker_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let wav = dir.path().join("silence.wav");
        let mut bytes = Vec::new();
        let data = vec![0u8; 16_000 * 2 * 3];
        bytes.extend(b"RIFF");
        bytes.extend(((36 + data.len()) as u32).to_le_bytes());
        bytes.extend(b"WAVEfmt ");
        bytes.extend(16u32.to_le_bytes());
        bytes.extend(1u16.to_le_bytes());
        bytes.extend(1u16.to_le_bytes());
        bytes.extend(16_000u32.to_le_bytes());
        bytes.extend(32_000u32.to_le_bytes());
        bytes.extend(2u16.to_le_bytes());
        bytes.extend(16u16.to_le_bytes());
        bytes.extend(b"data");
        bytes.extend((data.len() as u32).to_le_bytes());
        bytes.extend(&data);
        std::fs::write(&wav, &bytes).unwrap();
        let mut none: Vec<RawWord> = Vec::new();
        let out = label(&wav, &wav, &mut none).unwrap();
        assert_eq!(out.speakers, 0);
        let mut words = vec![word("Hm.", 0.5, 0.9), word("Yes", 1.5, f64::NAN)];
        let out = label(&wav, &wav, &mut words).unwrap();
        assert_eq!((out.speakers, out.mode), (1, Mode::Voice));
        assert!(words.iter().all(|w| w.speaker == 0));
    }
}
