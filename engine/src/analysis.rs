//! Extractive content analysis: highlights (central sentences) and chapters (topic segments).
//!
//! Both work on the words alone, so they also run on pocketsphinx output, which has neither
//! punctuation nor capitals:
//!
//! - [`highlights`] splits the words into sentences and ranks them by centrality: the TF-IDF
//!   cosine similarity of a sentence to the centroid of all *other* sentences. The sentence that
//!   shares the most (distinctive) vocabulary with the rest of the transcript wins.
//! - [`chapters`] segments the transcript by lexical cohesion in the manner of TextTiling
//!   (Hearst, 1997): the similarity of adjacent blocks of words dips where the topic changes, and
//!   the deepest dips become chapter boundaries, at least a minimum chapter length apart. Each
//!   chapter is titled with its most distinctive keywords.
//!
//! Pure and deterministic (hash maps never decide an order), no panics, O(n log n) in words.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use crate::punctuate::ends_sentence;
use crate::{Millis, Word};

/// A central sentence of the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Highlight {
    /// Start of the sentence's first word.
    pub start: Millis,
    /// End of the sentence's last word.
    pub end: Millis,
    /// The sentence's words joined by one space.
    pub text: String,
}

/// A topic segment of the transcript; it lasts until the next chapter starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Chapter {
    /// Start of the chapter's first word.
    pub start: Millis,
    /// Two to four keywords of the chapter, capitalised and joined by `, ` (fewer when the
    /// chapter has fewer content words; its first words when it has none).
    pub title: String,
}

/// Sentences longer than this many words are cut, so one unpunctuated stretch cannot dominate.
const MAX_SENTENCE_WORDS: usize = 60;
/// In punctuated text a silence this long still ends a sentence.
const LONG_PAUSE: Millis = Millis(2000);
/// In unpunctuated text, no pause shorter than this ends a sentence.
const MIN_SENTENCE_PAUSE: Millis = Millis(200);
/// Unpunctuated text is split at its largest pauses, aiming at sentences of about this many words.
const TARGET_SENTENCE_WORDS: usize = 12;
/// Weight of centrality against novelty when picking highlights (1.0: centrality alone).
const DIVERSITY_BALANCE: f64 = 0.7;
/// Cosine similarity at which a sentence counts as a repeat of one already picked.
const NEAR_REPEAT: f64 = 0.9;
/// Highlights picked with the novelty term; any beyond are picked by centrality alone.
const MAX_DIVERSE_PICKS: usize = 20;
/// Highlights shorter than this many words are scored down in proportion.
const FULL_WEIGHT_WORDS: f64 = 6.0;

/// TextTiling pseudo-sentence size, in words.
const GROUP_WORDS: usize = 20;
/// TextTiling block size, in pseudo-sentences on each side of a gap.
const BLOCK_GROUPS: usize = 6;
/// The shortest chapter: at least this long...
const MIN_CHAPTER: Millis = Millis(60_000);
/// ...and at least this fraction of the transcript, so a long transcript gets at most ~20.
const MIN_CHAPTER_FRACTION: i64 = 20;
/// A boundary's block similarity must dip to at most this fraction of the median similarity, so
/// that the ordinary ups and downs within one topic do not start chapters.
const DIP_FRACTION: f64 = 0.8;
/// Keywords in a chapter title.
const TITLE_KEYWORDS: usize = 3;

/// The transcript prepared for analysis: words in time order, each with its content term.
struct Doc<'a> {
    /// Words with text, in time order (stable for equal starts).
    words: Vec<&'a Word>,
    /// The content term of each word (an id into `surfaces`), `None` for stop words and noise.
    terms: Vec<Option<u32>>,
    /// The number of distinct content terms.
    vocabulary: usize,
    /// The word's core as written (punctuation and possessive removed), for titles.
    surfaces: Vec<String>,
}

impl<'a> Doc<'a> {
    fn new(words: &'a [Word]) -> Doc<'a> {
        let mut sorted: Vec<&Word> = words.iter().filter(|w| !w.text.trim().is_empty()).collect();
        sorted.sort_by_key(|w| w.start);
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut terms = Vec::with_capacity(sorted.len());
        let mut surfaces = Vec::with_capacity(sorted.len());
        for w in &sorted {
            let surface = surface_of(&w.text);
            let term = term_key(&surface).map(|key| {
                let next = ids.len() as u32;
                *ids.entry(key).or_insert(next)
            });
            terms.push(term);
            surfaces.push(surface);
        }
        Doc {
            words: sorted,
            terms,
            vocabulary: ids.len(),
            surfaces,
        }
    }

    fn len(&self) -> usize {
        self.words.len()
    }

    /// Sentences as ranges of word positions, covering every word in order.
    fn sentences(&self) -> Vec<Range<usize>> {
        let n = self.len();
        let ends_sentence: Vec<bool> = self.words.iter().map(|w| ends_sentence(&w.text)).collect();
        let marks = ends_sentence.iter().filter(|&&e| e).count();
        let punctuated = marks > 0 && marks * MAX_SENTENCE_WORDS >= n;
        let pause_threshold = if punctuated {
            LONG_PAUSE
        } else {
            self.pause_threshold()
        };
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &ends) in ends_sentence.iter().enumerate() {
            let speaker_changes = match (self.words.get(i), self.words.get(i + 1)) {
                (Some(a), Some(b)) => a.speaker != b.speaker,
                _ => true,
            };
            let split = i + 1 == n
                || (punctuated && ends)
                || self.gap_after(i) >= pause_threshold
                || speaker_changes
                || i + 1 - start >= MAX_SENTENCE_WORDS;
            if split {
                out.push(start..i + 1);
                start = i + 1;
            }
        }
        out
    }

    /// The silence between word `i` and the next one (zero when they overlap or `i` is last).
    fn gap_after(&self, i: usize) -> Millis {
        match (self.words.get(i), self.words.get(i + 1)) {
            (Some(a), Some(b)) => (b.start - a.end).max(Millis::ZERO),
            _ => Millis::ZERO,
        }
    }

    /// For unpunctuated text: the pause length that splits it into sentences of about
    /// [`TARGET_SENTENCE_WORDS`] words, never below [`MIN_SENTENCE_PAUSE`].
    fn pause_threshold(&self) -> Millis {
        let mut gaps: Vec<Millis> = (0..self.len().saturating_sub(1))
            .map(|i| self.gap_after(i))
            .collect();
        let wanted = gaps.len() / TARGET_SENTENCE_WORDS;
        if wanted == 0 {
            return MIN_SENTENCE_PAUSE;
        }
        // The wanted-th largest gap (O(n) selection).
        let k = gaps.len() - wanted;
        let (_, kth, _) = gaps.select_nth_unstable(k);
        (*kth).max(MIN_SENTENCE_PAUSE)
    }

    fn text_of(&self, range: Range<usize>) -> String {
        let mut text = String::new();
        for w in self.words.get(range).unwrap_or_default() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(w.text.trim());
        }
        text
    }
}

/// The most central sentences of the transcript, at most `max`, in time order.
///
/// Sentences end at `.`, `?`, `!` (and their CJK forms), at a speaker change and at a silence of
/// 2 s or more; a transcript without punctuation (pocketsphinx) is split at its longest pauses
/// instead, aiming at about 12 words per sentence. Each sentence is a TF-IDF vector over its
/// content words (stop words of English, Dutch, German, French and Spanish removed, plurals
/// folded); its score is the cosine similarity to the sum of all other sentences' vectors, scaled
/// down for sentences under 6 words. The picks balance that centrality (weight 0.7) against
/// similarity to the sentences already picked (0.3), and skip near-repeats of a picked one, so that
/// highlights cover more than the main point. Sentences without content words are never highlights; ties go to the earlier sentence.
pub fn highlights(words: &[Word], max: usize) -> Vec<Highlight> {
    let doc = Doc::new(words);
    if max == 0 || doc.len() == 0 {
        return Vec::new();
    }
    let sentences = doc.sentences();
    let vectors = tfidf_vectors(&doc, &sentences);

    let mut centroid = vec![0.0f64; doc.vocabulary];
    for v in &vectors {
        for &(id, w) in v {
            if let Some(c) = centroid.get_mut(id as usize) {
                *c += w;
            }
        }
    }
    let centroid_norm2: f64 = centroid.iter().map(|c| c * c).sum();
    let with_content = vectors.iter().filter(|v| !v.is_empty()).count();

    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (index, (v, range)) in vectors.iter().zip(&sentences).enumerate() {
        if v.is_empty() {
            continue;
        }
        // Unit vector s against the rest R = C - s: cos = (s.C - 1) / |C - s|.
        let dot: f64 = v
            .iter()
            .map(|&(id, w)| w * centroid.get(id as usize).copied().unwrap_or(0.0))
            .sum();
        let rest_norm2 = centroid_norm2 - 2.0 * dot + 1.0;
        let centrality = if with_content == 1 {
            1.0
        } else if rest_norm2 > 1e-12 {
            (dot - 1.0) / rest_norm2.sqrt()
        } else {
            0.0
        };
        let length_weight = (range.len() as f64 / FULL_WEIGHT_WORDS).min(1.0);
        let score = centrality * length_weight;
        if score > 0.0 && score.is_finite() {
            scored.push((score, index));
        }
    }
    let mut picked = select_diverse(&scored, &vectors, max);
    picked.sort_unstable();

    picked
        .into_iter()
        .filter_map(|index| {
            let range = sentences.get(index)?.clone();
            let first = doc.words.get(range.start)?;
            let last = doc.words.get(range.end.checked_sub(1)?)?;
            Some(Highlight {
                start: first.start,
                end: last.end.max(first.start),
                text: doc.text_of(range),
            })
        })
        .collect()
}

/// Picks up to `max` of the scored sentences by maximal marginal relevance: each pick maximises
/// `DIVERSITY_BALANCE * score - (1 - DIVERSITY_BALANCE) * (its largest similarity to a sentence
/// already picked)`, so highlights cover the transcript instead of repeating its main point; a
/// sentence at least 0.9 similar to one already picked is not picked while others are left. The
/// first [`MAX_DIVERSE_PICKS`] picks are chosen so; any further ones by score alone, which keeps
/// the cost at O(sentences * 20) for any `max`. Ties go to the earlier sentence.
fn select_diverse(scored: &[(f64, usize)], vectors: &[Vec<(u32, f64)>], max: usize) -> Vec<usize> {
    let mut by_score: Vec<(f64, usize)> = scored.to_vec();
    by_score.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if max >= by_score.len() {
        return by_score.into_iter().map(|(_, index)| index).collect();
    }
    let mut redundancy = vec![0.0f64; by_score.len()];
    let mut taken = vec![false; by_score.len()];
    let mut picked = Vec::with_capacity(max);
    while picked.len() < max.min(MAX_DIVERSE_PICKS) {
        let mut best: Option<(f64, usize)> = None;
        for (k, &(score, _)) in by_score.iter().enumerate() {
            // A near-repeat of a picked sentence is never a second highlight.
            if taken[k] || redundancy[k] >= NEAR_REPEAT {
                continue;
            }
            let value = DIVERSITY_BALANCE * score - (1.0 - DIVERSITY_BALANCE) * redundancy[k];
            // by_score is in score order, so a strict `>` keeps the better-scored (then earlier)
            // sentence on a tie.
            if best.is_none_or(|(v, _)| value > v) {
                best = Some((value, k));
            }
        }
        let Some((_, k)) = best else {
            break;
        };
        taken[k] = true;
        let chosen = by_score[k].1;
        picked.push(chosen);
        let Some(chosen_vector) = vectors.get(chosen) else {
            continue;
        };
        for (j, &(_, index)) in by_score.iter().enumerate() {
            if !taken[j] {
                let similarity = vectors.get(index).map_or(0.0, |v| dot(v, chosen_vector));
                redundancy[j] = redundancy[j].max(similarity);
            }
        }
    }
    for (k, &(_, index)) in by_score.iter().enumerate() {
        if picked.len() >= max {
            break;
        }
        if !taken[k] {
            picked.push(index);
        }
    }
    picked
}

/// Dot product of two sparse vectors sorted by id.
fn dot(a: &[(u32, f64)], b: &[(u32, f64)]) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0f64);
    while let (Some(&(ia, wa)), Some(&(ib, wb))) = (a.get(i), b.get(j)) {
        match ia.cmp(&ib) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += wa * wb;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// Unit-length TF-IDF vectors, one per range, as (term id, weight) sorted by id.
fn tfidf_vectors(doc: &Doc<'_>, ranges: &[Range<usize>]) -> Vec<Vec<(u32, f64)>> {
    let counts: Vec<Vec<(u32, u32)>> = ranges.iter().map(|r| term_counts(doc, r)).collect();
    let mut df = vec![0u32; doc.vocabulary];
    for c in &counts {
        for &(id, _) in c {
            if let Some(d) = df.get_mut(id as usize) {
                *d += 1;
            }
        }
    }
    let n = ranges.len() as f64;
    counts
        .into_iter()
        .map(|c| {
            let mut v: Vec<(u32, f64)> = c
                .into_iter()
                .map(|(id, tf)| {
                    let d = df.get(id as usize).copied().unwrap_or(1) as f64;
                    let idf = ((1.0 + n) / (1.0 + d)).ln() + 1.0;
                    (id, (1.0 + (tf as f64).ln()) * idf)
                })
                .collect();
            let norm = v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            v
        })
        .collect()
}

/// Term counts of the words in `range`, sorted by term id.
fn term_counts(doc: &Doc<'_>, range: &Range<usize>) -> Vec<(u32, u32)> {
    let mut ids: Vec<u32> = doc
        .terms
        .get(range.clone())
        .unwrap_or_default()
        .iter()
        .flatten()
        .copied()
        .collect();
    ids.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for id in ids {
        match out.last_mut() {
            Some((last, count)) if *last == id => *count += 1,
            _ => out.push((id, 1)),
        }
    }
    out
}

/// Cosine similarity of two count vectors sorted by id.
fn cosine(a: &[(u32, u32)], b: &[(u32, u32)]) -> f64 {
    let (mut i, mut j, mut dot) = (0, 0, 0.0f64);
    while let (Some(&(ia, ca)), Some(&(ib, cb))) = (a.get(i), b.get(j)) {
        match ia.cmp(&ib) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += ca as f64 * cb as f64;
                i += 1;
                j += 1;
            }
        }
    }
    let norm = |v: &[(u32, u32)]| {
        v.iter()
            .map(|&(_, c)| (c as f64).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let denominator = norm(a) * norm(b);
    if denominator > 0.0 {
        dot / denominator
    } else {
        0.0
    }
}

/// Merges two count vectors sorted by id.
fn add_counts(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    loop {
        match (a.get(i), b.get(j)) {
            (Some(&(ia, ca)), Some(&(ib, cb))) => match ia.cmp(&ib) {
                std::cmp::Ordering::Less => {
                    out.push((ia, ca));
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push((ib, cb));
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    out.push((ia, ca + cb));
                    i += 1;
                    j += 1;
                }
            },
            (Some(&x), None) => {
                out.push(x);
                i += 1;
            }
            (None, Some(&y)) => {
                out.push(y);
                j += 1;
            }
            (None, None) => return out,
        }
    }
}

/// Topic chapters of the transcript, the first starting at its first word.
///
/// TextTiling over pseudo-sentences of 20 words: at every gap between them, the cosine
/// similarity of the content-word counts of the 6 pseudo-sentences before and the 6 after
/// (smoothed over 3 gaps). A gap's depth is how far the similarity dips below the nearest peaks on
/// both sides; gaps deeper than the mean depth plus half its standard deviation, whose similarity
/// is also at most 0.8 times the median similarity, are candidates (gaps whose blocks are cut short
/// by the start or end of the transcript are not).
/// The deepest candidates become boundaries, moved to the nearest sentence start, as long as every
/// chapter lasts at least 60 s and at least 1/20 of the transcript. A transcript shorter than two
/// minimum chapters is one chapter. Titles are the chapter's three most distinctive keywords (term
/// frequency in the chapter times inverse chapter frequency), in their most frequent spelling,
/// capitalised.
pub fn chapters(words: &[Word]) -> Vec<Chapter> {
    let doc = Doc::new(words);
    let (Some(first), Some(last)) = (doc.words.first(), doc.words.last()) else {
        return Vec::new();
    };
    let begin = first.start;
    let finish = doc.words.iter().map(|w| w.end).max().unwrap_or(last.end);
    let duration = finish - begin;
    let min_len = MIN_CHAPTER.max(Millis(duration.0 / MIN_CHAPTER_FRACTION));

    let mut starts = vec![0usize];
    if duration >= min_len + min_len {
        let sentence_starts: Vec<usize> = doc.sentences().iter().map(|r| r.start).collect();
        starts.extend(boundaries(&doc, &sentence_starts, begin, finish, min_len));
    }

    let segments: Vec<Range<usize>> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(doc.len()))
        .collect();
    let titles = titles(&doc, &segments);
    segments
        .iter()
        .zip(titles)
        .filter_map(|(range, title)| {
            Some(Chapter {
                start: doc.words.get(range.start)?.start,
                title,
            })
        })
        .collect()
}

/// Chapter boundaries (word positions, ascending, never 0) by TextTiling depth scores.
fn boundaries(
    doc: &Doc<'_>,
    sentence_starts: &[usize],
    begin: Millis,
    finish: Millis,
    min_len: Millis,
) -> Vec<usize> {
    let groups: Vec<Range<usize>> = (0..doc.len())
        .step_by(GROUP_WORDS)
        .map(|s| s..(s + GROUP_WORDS).min(doc.len()))
        .collect();
    let group_counts: Vec<Vec<(u32, u32)>> = groups.iter().map(|g| term_counts(doc, g)).collect();
    if groups.len() < 4 {
        return Vec::new();
    }
    let block = BLOCK_GROUPS.min(groups.len() / 2);

    // Similarity at gap i, between group i and group i + 1.
    let gaps = groups.len() - 1;
    let raw: Vec<f64> = (0..gaps)
        .map(|i| {
            let left = block_counts(&group_counts, (i + 1).saturating_sub(block)..i + 1);
            let right = block_counts(&group_counts, i + 1..(i + 1 + block).min(groups.len()));
            cosine(&left, &right)
        })
        .collect();
    let smoothed: Vec<f64> = (0..gaps)
        .map(|i| {
            let window = raw
                .get(i.saturating_sub(1)..(i + 2).min(gaps))
                .unwrap_or(&[]);
            window.iter().sum::<f64>() / window.len().max(1) as f64
        })
        .collect();

    // Peaks reached by climbing from each gap while the similarity does not fall.
    let mut left_peak = smoothed.clone();
    for i in 1..gaps {
        if smoothed[i - 1] >= smoothed[i] {
            left_peak[i] = left_peak[i - 1];
        }
    }
    let mut right_peak = smoothed.clone();
    for i in (0..gaps.saturating_sub(1)).rev() {
        if smoothed[i + 1] >= smoothed[i] {
            right_peak[i] = right_peak[i + 1];
        }
    }
    let depth: Vec<f64> = (0..gaps)
        .map(|i| (left_peak[i] - smoothed[i]) + (right_peak[i] - smoothed[i]))
        .collect();
    // Only gaps with full blocks on both sides count: near the ends a block is short and its
    // similarity noisy. `block <= groups / 2` keeps at least one such gap.
    let eligible = block.saturating_sub(1)..(groups.len() + 1).saturating_sub(block).min(gaps);
    let (Some(eligible_depth), Some(eligible_similarity)) =
        (depth.get(eligible.clone()), smoothed.get(eligible.clone()))
    else {
        return Vec::new();
    };
    let count = eligible_depth.len().max(1) as f64;
    let mean = eligible_depth.iter().sum::<f64>() / count;
    let sd = (eligible_depth
        .iter()
        .map(|d| (d - mean).powi(2))
        .sum::<f64>()
        / count)
        .sqrt();
    let cutoff = mean + sd / 2.0;
    let mut sorted_similarity = eligible_similarity.to_vec();
    sorted_similarity.sort_by(f64::total_cmp);
    let median = sorted_similarity
        .get(sorted_similarity.len() / 2)
        .copied()
        .unwrap_or(0.0);
    let dip_ceiling = median * DIP_FRACTION;

    let mut candidates: Vec<(f64, usize)> = eligible
        .filter_map(|i| Some((*depth.get(i)?, *smoothed.get(i)?, i)))
        .filter(|&(d, similarity, _)| d > cutoff && d > 0.0 && similarity <= dip_ceiling)
        .map(|(d, _, i)| (d, i))
        .collect();
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

    let mut accepted: BTreeSet<(Millis, usize)> = BTreeSet::new();
    for (_, gap) in candidates {
        let position = snap_to_sentence((gap + 1) * GROUP_WORDS, sentence_starts);
        let Some(word) = doc.words.get(position) else {
            continue;
        };
        let t = word.start;
        if position == 0 || t - begin < min_len || finish - t < min_len {
            continue;
        }
        let before = accepted.range(..(t, usize::MAX)).next_back();
        let after = accepted.range((t, 0)..).next();
        let far_enough = before.is_none_or(|&(b, _)| t - b >= min_len)
            && after.is_none_or(|&(a, _)| a - t >= min_len);
        if far_enough {
            accepted.insert((t, position));
        }
    }
    accepted.into_iter().map(|(_, position)| position).collect()
}

fn block_counts(group_counts: &[Vec<(u32, u32)>], range: Range<usize>) -> Vec<(u32, u32)> {
    group_counts
        .get(range)
        .unwrap_or_default()
        .iter()
        .fold(Vec::new(), |acc, c| add_counts(&acc, c))
}

/// The sentence start nearest to `position` within half a pseudo-sentence, else `position`.
fn snap_to_sentence(position: usize, sentence_starts: &[usize]) -> usize {
    let i = sentence_starts.partition_point(|&s| s < position);
    let candidates = [
        i.checked_sub(1).and_then(|k| sentence_starts.get(k)),
        sentence_starts.get(i),
    ];
    candidates
        .into_iter()
        .flatten()
        .map(|&s| (s.abs_diff(position), s))
        .filter(|&(d, _)| d <= GROUP_WORDS / 2)
        .min()
        .map_or(position, |(_, s)| s)
}

/// One title per segment from its most distinctive keywords.
fn titles(doc: &Doc<'_>, segments: &[Range<usize>]) -> Vec<String> {
    let counts: Vec<Vec<(u32, u32)>> = segments.iter().map(|r| term_counts(doc, r)).collect();
    let mut df = vec![0u32; doc.vocabulary];
    for c in &counts {
        for &(id, _) in c {
            if let Some(d) = df.get_mut(id as usize) {
                *d += 1;
            }
        }
    }
    let n = segments.len() as f64;
    segments
        .iter()
        .zip(&counts)
        .map(|(range, c)| {
            // Prefer terms said more than once; fall back to single mentions.
            let repeated = c.iter().filter(|&&(_, tf)| tf >= 2).count();
            let mut ranked: Vec<(f64, usize, u32)> = c
                .iter()
                .filter(|&&(_, tf)| repeated < 2 || tf >= 2)
                .map(|&(id, tf)| {
                    let d = df.get(id as usize).copied().unwrap_or(1) as f64;
                    let idf = ((1.0 + n) / (1.0 + d)).ln() + 1.0;
                    let first_use = doc
                        .terms
                        .get(range.clone())
                        .unwrap_or_default()
                        .iter()
                        .position(|&t| t == Some(id))
                        .unwrap_or(usize::MAX);
                    (tf as f64 * idf, first_use, id)
                })
                .collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let keywords: Vec<String> = ranked
                .iter()
                .take(TITLE_KEYWORDS)
                .map(|&(_, _, id)| capitalise(&spelling(doc, range, id)))
                .collect();
            if keywords.is_empty() {
                let end = (range.start + TITLE_KEYWORDS).min(range.end);
                doc.text_of(range.start..end)
            } else {
                keywords.join(", ")
            }
        })
        .collect()
}

/// The most frequent spelling of term `id` within `range` (the earliest on a tie).
fn spelling(doc: &Doc<'_>, range: &Range<usize>, id: u32) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for i in range.clone() {
        if doc.terms.get(i).copied().flatten() != Some(id) {
            continue;
        }
        let Some(surface) = doc.surfaces.get(i) else {
            continue;
        };
        // Spellings of one term are few (case and plural variants), so this stays small.
        if let Some((_, count)) = seen.iter_mut().find(|(s, _)| *s == surface.as_str()) {
            *count += 1;
        } else if seen.len() < 16 {
            seen.push((surface.as_str(), 1));
        }
    }
    let best = seen
        .iter()
        .enumerate()
        .max_by(|(ia, a), (ib, b)| a.1.cmp(&b.1).then(ib.cmp(ia)));
    best.map_or_else(String::new, |(_, (s, _))| s.to_string())
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The word as written, without surrounding punctuation or a possessive `'s`.
fn surface_of(text: &str) -> String {
    let core = text.trim_matches(|c: char| !c.is_alphanumeric());
    let core = core
        .strip_suffix("'s")
        .or_else(|| core.strip_suffix("’s"))
        .unwrap_or(core);
    core.to_string()
}

/// The content term of a surface form: lowercased letters and digits with plurals folded, or
/// `None` for stop words, numbers and words under three letters (two in CJK scripts).
fn term_key(surface: &str) -> Option<String> {
    let lower: String = surface
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    // Chinese and Japanese words are short: two characters already carry a topic there.
    let min_chars = if lower.chars().any(is_cjk) { 2 } else { 3 };
    if lower.chars().count() < min_chars || lower.chars().all(|c| c.is_numeric()) {
        return None;
    }
    if STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
        return None;
    }
    Some(fold_plural(lower))
}

/// Han, kana and Hangul: scripts whose words are often one or two characters long.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// Folds common plural endings so `rocket` and `rockets` are one term.
fn fold_plural(mut word: String) -> String {
    let chars = word.chars().count();
    if chars > 4 && word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if chars > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word.pop();
    }
    word
}

/// Function words of English, Dutch, German, French and Spanish (three letters or more; shorter
/// words are dropped anyway), sorted for binary search. Mixed on purpose: analysis takes no
/// language, and these words carry no topic in any of them.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "aan", "aber", "about", "above", "after", "again", "against", "ain", "all", "allen", "aller",
    "alles", "alors", "already", "als", "also", "always", "among", "and", "another", "any",
    "anything", "are", "aren", "around", "auch", "auf", "aus", "avec", "back", "because", "been",
    "before", "bei", "being", "below", "between", "bij", "bin", "bis", "both", "but", "can",
    "cannot", "ce", "cela", "ces", "cette", "como", "con", "could", "couldn", "cual", "dan",
    "dann", "dans", "das", "dass", "dat", "daß", "deine", "del", "dem", "den", "der", "des",
    "desde", "deze", "did", "didn", "die", "dies", "diese", "dit", "does", "doesn", "doing", "don",
    "done", "door", "down", "during", "each", "een", "eine", "einem", "einen", "einer", "eines",
    "ella", "elle", "elles", "ellos", "els", "end", "entre", "era", "eres", "esa", "ese", "eso",
    "est", "esta", "este", "esto", "están", "etwas", "even", "ever", "every", "few", "first",
    "for", "from", "further", "für", "geen", "get", "gets", "getting", "gibt", "going", "gonna",
    "got", "gotta", "had", "hadn", "half", "has", "hasn", "hat", "hatte", "have", "haven",
    "having", "hebben", "heeft", "her", "here", "hers", "herself", "het", "him", "himself", "his",
    "hoe", "how", "ich", "ihm", "ihn", "ihr", "ihre", "ils", "ist", "its", "itself", "jetzt",
    "just", "kan", "kann", "kind", "know", "las", "les", "leur", "like", "los", "lot", "lots",
    "made", "mais", "make", "man", "many", "maybe", "mean", "means", "meer", "mehr", "met", "mich",
    "mij", "mijn", "mir", "mit", "moi", "more", "most", "much", "must", "mustn", "myself", "nach",
    "need", "next", "nicht", "niet", "noch", "nog", "nor", "nos", "nosotros", "not", "nothing",
    "nous", "now", "nur", "oder", "off", "okay", "once", "one", "only", "ons", "ont", "onze",
    "ook", "other", "otherwise", "our", "ours", "ourselves", "out", "over", "own", "par", "para",
    "pas", "pero", "por", "porque", "pour", "quand", "que", "qui", "quite", "really", "right",
    "said", "same", "say", "says", "see", "sein", "seine", "she", "should", "shouldn", "sich",
    "sie", "since", "sind", "sobre", "some", "something", "son", "still", "such", "sur", "tal",
    "than", "that", "thats", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "thing", "things", "think", "this", "those", "though", "three", "through",
    "todo", "tot", "tous", "tout", "toute", "très", "two", "una", "und", "under", "une", "uno",
    "unos", "uns", "unter", "until", "upon", "use", "used", "van", "very", "vom", "von", "voor",
    "vor", "vous", "want", "was", "wasn", "way", "well", "wenn", "went", "wer", "were", "weren",
    "what", "when", "where", "which", "while", "who", "whole", "whom", "why", "wie", "will", "wir",
    "with", "won", "would", "wouldn", "yeah", "yes", "you", "your", "yours", "yourself",
    "yourselves", "zal", "zich", "zijn", "zou", "zum", "zur", "été", "über",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Words from sentences, 0.4 s per word with 0.1 s between words and 0.6 s between sentences.
    fn speech(sentences: &[&str]) -> Vec<Word> {
        let mut t = 0i64;
        let mut out = Vec::new();
        for s in sentences {
            for w in s.split_whitespace() {
                out.push(Word::new(w, Millis(t), Millis(t + 400), 0));
                t += 500;
            }
            t += 500;
        }
        out
    }

    /// A deterministic pseudo-random sequence (a linear congruential generator).
    struct Lcg(u64);
    impl Lcg {
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            items[(self.0 >> 33) as usize % items.len()]
        }
    }

    /// `count` sentences about one topic: function-word frames filled with the topic's nouns.
    fn topic(rng: &mut Lcg, nouns: &[&str], count: usize) -> Vec<String> {
        let frames = [
            "The {} and the {} were ready before the {} arrived.",
            "We talked about the {} because the {} needed a new {}.",
            "Nobody expected the {} to change the {} so quickly, said the {}.",
            "After lunch the {} was checked against the {} and the {}.",
        ];
        (0..count)
            .map(|_| {
                let frame = rng.pick(&frames);
                let mut s = String::new();
                for (k, part) in frame.split("{}").enumerate() {
                    if k > 0 {
                        s.push_str(rng.pick(nouns));
                    }
                    s.push_str(part);
                }
                s
            })
            .collect()
    }

    const SPACE: &[&str] = &["rocket", "fuel", "orbit", "launch", "engine", "satellite"];
    const BAKING: &[&str] = &["bread", "flour", "oven", "dough", "yeast", "butter"];
    const GARDEN: &[&str] = &[
        "tomato",
        "soil",
        "compost",
        "seedling",
        "greenhouse",
        "weed",
    ];

    fn as_strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    fn title_mentions(title: &str, nouns: &[&str]) -> usize {
        let lower = title.to_lowercase();
        nouns.iter().filter(|n| lower.contains(*n)).count()
    }

    #[test]
    fn highlights_pick_the_sentence_sharing_the_most_vocabulary() {
        let words = speech(&[
            "Rockets need fuel to climb.",
            "The engines burn fuel quickly.",
            "A rocket reaches orbit when its engines burn enough fuel.",
            "My cat likes warm milk.",
            "Orbit is where rockets go.",
        ]);
        let top = highlights(&words, 1);
        assert_eq!(top.len(), 1);
        assert_eq!(
            top[0].text,
            "A rocket reaches orbit when its engines burn enough fuel."
        );
        // Times are the sentence's own: it starts at the 11th word.
        assert_eq!(top[0].start, words[10].start);
        assert_eq!(top[0].end, words[19].end);
    }

    #[test]
    fn highlights_come_in_time_order_and_skip_off_topic_sentences() {
        let words = speech(&[
            "A rocket reaches orbit when its engines burn enough fuel.",
            "My cat likes warm milk in the evening.",
            "Rocket engines burn fuel to reach orbit.",
            "Fuel makes the rocket engines reach orbit.",
        ]);
        let top = highlights(&words, 3);
        assert_eq!(top.len(), 3);
        assert!(top.windows(2).all(|w| w[0].start < w[1].start));
        assert!(top.iter().all(|h| !h.text.contains("cat")));
        assert!(highlights(&words, 0).is_empty());
        assert!(highlights(&[], 3).is_empty());
    }

    #[test]
    fn highlights_do_not_repeat_one_point() {
        let words = speech(&[
            "Rocket engines burn fuel to reach orbit.",
            "Rocket engines burn fuel to reach orbit.",
            "The rocket launch needs calm weather and enough fuel.",
            "Orbit insertion takes a precise engine burn.",
            "My cat likes warm milk.",
        ]);
        let top = highlights(&words, 2);
        assert_eq!(top.len(), 2);
        assert_ne!(top[0].text, top[1].text, "{top:?}");
        // Centrality alone would pick the repeated sentence twice.
        assert_eq!(top[0].text, "Rocket engines burn fuel to reach orbit.");
    }

    #[test]
    fn highlights_split_unpunctuated_speech_at_pauses() {
        // Pocketsphinx style: no punctuation, no capitals; sentences only by pauses.
        let sentences = [
            "rockets need fuel to climb high",
            "the engines burn fuel quickly",
            "a rocket reaches orbit when its engines burn enough fuel",
            "my cat likes warm milk",
        ];
        let words = speech(&sentences);
        let top = highlights(&words, 1);
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].text, sentences[2]);
    }

    #[test]
    fn a_highlight_ends_where_the_speaker_changes() {
        // The recognizer missed the full stop where a second person cuts in: the speaker change
        // still ends the sentence, so a highlight never puts two people's words in one quote.
        let mut words = speech(&[
            "Rockets need fuel to climb.",
            "The engines burn fuel quickly.",
            "A rocket reaches orbit when its engines burn enough fuel my cat likes warm milk.",
        ]);
        let cut = words.len() - 5;
        for w in &mut words[cut..] {
            w.speaker = 1;
        }
        let top = highlights(&words, 1);
        assert_eq!(
            top[0].text,
            "A rocket reaches orbit when its engines burn enough fuel"
        );
        assert_eq!(top[0].end, words[cut - 1].end);
    }

    #[test]
    fn chapters_find_the_switch_between_two_topics_and_name_them() {
        let mut rng = Lcg(7);
        let mut sentences = topic(&mut rng, SPACE, 30);
        let switch_at = sentences.len();
        sentences.extend(topic(&mut rng, BAKING, 30));
        let words = speech(&as_strs(&sentences));
        let switch_time = {
            let first_words: usize = sentences[..switch_at]
                .iter()
                .map(|s| s.split_whitespace().count())
                .sum();
            words[first_words].start
        };

        let found = chapters(&words);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].start, words[0].start);
        assert!(
            (found[1].start.0 - switch_time.0).abs() <= 10_000,
            "boundary at {:?}, topic switch at {switch_time:?}",
            found[1].start
        );
        assert!(
            title_mentions(&found[0].title, SPACE) >= 2,
            "{}",
            found[0].title
        );
        assert_eq!(title_mentions(&found[0].title, BAKING), 0);
        assert!(
            title_mentions(&found[1].title, BAKING) >= 2,
            "{}",
            found[1].title
        );
        assert_eq!(title_mentions(&found[1].title, SPACE), 0);
    }

    #[test]
    fn chapters_follow_three_topics_in_order() {
        let mut rng = Lcg(42);
        let mut sentences = Vec::new();
        for nouns in [SPACE, GARDEN, BAKING] {
            sentences.extend(topic(&mut rng, nouns, 25));
        }
        let words = speech(&as_strs(&sentences));
        let found = chapters(&words);
        assert_eq!(found.len(), 3, "{found:?}");
        for (chapter, nouns) in found.iter().zip([SPACE, GARDEN, BAKING]) {
            assert!(
                title_mentions(&chapter.title, nouns) >= 2,
                "{}",
                chapter.title
            );
        }
        // Titles are capitalised keywords: "Rocket, Fuel, Orbit".
        let first = found[0].title.split(", ").collect::<Vec<_>>();
        assert!((2..=4).contains(&first.len()));
        assert!(first
            .iter()
            .all(|k| k.chars().next().is_some_and(char::is_uppercase)));
    }

    #[test]
    fn chapters_leave_one_topic_in_one_piece() {
        let mut rng = Lcg(5);
        let words = speech(&as_strs(&topic(&mut rng, SPACE, 60)));
        let found = chapters(&words);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            title_mentions(&found[0].title, SPACE) >= 2,
            "{}",
            found[0].title
        );
    }

    #[test]
    fn chapters_are_at_least_a_minute_long() {
        // Two topics of about 40 s each: too short for two chapters.
        let mut rng = Lcg(3);
        let mut sentences = topic(&mut rng, SPACE, 6);
        sentences.extend(topic(&mut rng, BAKING, 6));
        let words = speech(&as_strs(&sentences));
        let found = chapters(&words);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].start, words[0].start);
    }

    #[test]
    fn one_chapter_for_a_short_or_odd_transcript() {
        assert!(chapters(&[]).is_empty());
        let words = speech(&["Hello there."]);
        let found = chapters(&words);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].title, "Hello");
        // Only stop words: the title falls back to the first words.
        let found = chapters(&speech(&["and the of it is"]));
        assert_eq!(found[0].title, "and the of");
    }

    #[test]
    fn chapter_titles_use_cjk_words() {
        let words = speech(&["火箭 发射 火箭 燃料 的 了", "火箭 燃料 轨道"]);
        let found = chapters(&words);
        assert_eq!(found.len(), 1);
        assert!(found[0].title.starts_with("火箭"), "{}", found[0].title);
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn analysis_sorts_unsorted_words_and_survives_hostile_times() {
        let mut words = speech(&["Rockets need fuel.", "Engines burn fuel."]);
        words.reverse();
        words.push(Word::new("  ", Millis(i64::MIN), Millis(i64::MAX), 9));
        words.push(Word::new("orbit!", Millis(i64::MAX), Millis(i64::MIN), 1));
        let found = chapters(&words);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].start, Millis(0));
        let top = highlights(&words, 5);
        assert!(!top.is_empty());
    }

    #[test]
    fn analysis_of_a_long_transcript_is_deterministic() {
        let mut rng = Lcg(11);
        let mut sentences = Vec::new();
        for k in 0..40 {
            sentences.extend(topic(&mut rng, [SPACE, GARDEN, BAKING][k % 3], 20));
        }
        let words = speech(&as_strs(&sentences));
        let once = (chapters(&words), highlights(&words, 5));
        let twice = (chapters(&words), highlights(&words, 5));
        assert_eq!(once, twice);
        assert!(once.0.len() > 3 && once.0.len() <= 21, "{}", once.0.len());
        assert!(once
            .0
            .windows(2)
            .all(|c| c[1].start - c[0].start >= MIN_CHAPTER));
        assert_eq!(once.1.len(), 5);
    }
}
