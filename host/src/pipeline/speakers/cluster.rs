//! Who speaks each word, from each word's MFCC statistics: segments between change points,
//! agglomerative clustering with a length-normalised stopping rule, then a Viterbi pass over the
//! words that smooths the labels.
//!
//! The stopping rule. Two segments' generalized likelihood ratio (GLR: how much better two
//! Gaussians explain their frames than one) grows in proportion to their frames when the voices
//! differ, and stays near its chance value (half the Gaussian's free parameters) when they do not;
//! but one voice's clusters also drift apart slowly as they grow (its vowels are not the same from
//! minute to minute). A BIC penalty grows only with the log of the frames, so on long recordings
//! the drift wins and one voice splits in two. Here the distance is the GLR *per frame* after its
//! chance value is taken off — `(GLR - kappa * PARAMS / 2) / n` — which tends to a fixed
//! divergence between two voices whatever the length, and merging stops when the closest pair is
//! further apart than `threshold`. Constants chosen on the tuned part of
//! `scripts/diarization-corpus` only.

use super::stats::{Gaussian, Stats, PARAMS};

/// The constants of the clustering and of the Viterbi pass (chosen on the tuned part of
/// `scripts/diarization-corpus`; `Tuning::default()` is what the pipeline uses).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Chance value multiplier of the GLR (see the module's doc).
    pub kappa: f64,
    /// Largest per-frame distance two clusters may have and still merge.
    pub threshold: f64,
    /// The weight, in frames, of the whole recording's covariance in a cluster's covariance.
    pub tau: f64,
    /// Segments with fewer voiced frames are not clustered; the Viterbi pass labels them.
    pub min_frames: f64,
    /// Clusters with fewer voiced frames than this (after clustering) are merged into their
    /// nearest.
    pub min_cluster_frames: f64,
    /// A voice heard only in short replies: a segment of at least this many voiced frames
    /// whose fit to every cluster ([`fit`]) is worse than `reply_fit` is an odd one out.
    pub min_reply_frames: f64,
    /// The per-frame [`fit`] (nats) above which a segment, and the odd ones out together, lie
    /// far from a cluster.
    pub reply_fit: f64,
    /// The odd ones out become a speaker of their own when they are at least this many separate
    /// turns (another speaker's segment between each two), together far from every cluster.
    pub min_replies: f64,
    /// Viterbi: cost (in nats) of a speaker change at a boundary (a pause or a sentence end).
    pub switch_at_boundary: f64,
    /// Viterbi: cost of a speaker change inside a sentence without a pause.
    pub switch_inside: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            kappa: 1.5,
            threshold: 0.25,
            tau: 100.0,
            min_frames: 40.0,
            min_cluster_frames: 400.0,
            min_reply_frames: 20.0,
            reply_fit: 3.0,
            min_replies: 3.0,
            switch_at_boundary: 5.0,
            switch_inside: 40.0,
        }
    }
}

/// At most this many segments are clustered at once; more are clustered in blocks first.
const BLOCK: usize = 300;
/// The most speakers reported.
pub const MAX_SPEAKERS: usize = 8;

/// The GLR of `a` and `b` with its chance value taken off (`GLR - kappa * PARAMS / 2`), and the
/// frames of both; `None` when one of the three Gaussians cannot be made.
fn penalised_glr(a: &Stats, b: &Stats, prior: &[f64; 78], t: &Tuning) -> Option<(f64, f64)> {
    let mut ab = a.clone();
    ab.merge(b);
    let ga = Gaussian::from(a, prior, t.tau)?;
    let gb = Gaussian::from(b, prior, t.tau)?;
    let gab = Gaussian::from(&ab, prior, t.tau)?;
    let glr = 0.5 * (ab.n * gab.logdet - a.n * ga.logdet - b.n * gb.logdet);
    Some((glr - t.kappa * PARAMS / 2.0, ab.n))
}

/// Per-frame GLR distance of two clusters, as the module's doc describes it.
pub fn distance(a: &Stats, b: &Stats, prior: &[f64; 78], t: &Tuning) -> f64 {
    penalised_glr(a, b, prior, t).map_or(f64::INFINITY, |(g, n)| g / n.max(1.0))
}

/// How much worse `small` is explained by the cluster `big` than by a Gaussian of its own, per
/// frame of `small`, with the chance value taken off: `(GLR - kappa * PARAMS / 2) / n_small`.
/// [`distance`] divides by both clusters' frames, so a short segment beside a long cluster
/// always looks close; this asks whether the short segment's own frames fit the cluster.
pub fn fit(small: &Stats, big: &Stats, prior: &[f64; 78], t: &Tuning) -> f64 {
    penalised_glr(small, big, prior, t).map_or(f64::NEG_INFINITY, |(g, _)| g / small.n.max(1.0))
}

/// Agglomerative clustering of `items` (their statistics): the closest pair merges while closer
/// than `threshold` or while there are more than `MAX_SPEAKERS` clusters; with `fixed`, while
/// there are more than that many (blocks of a long recording keep at least that many each). Returns a cluster
/// index per item (0.. in order of first item). Ties are broken by the lower item indices, so the
/// partition does not depend on the order items come in (for up to `BLOCK` items).
pub fn agglomerate(
    items: &[Stats],
    prior: &[f64; 78],
    t: &Tuning,
    fixed: Option<usize>,
) -> Vec<usize> {
    let stop = match fixed {
        Some(k) => Stop::Count(k.max(1)),
        None => Stop::Auto,
    };
    if items.len() <= BLOCK {
        return cluster_all(items, prior, t, stop);
    }
    let block_stop = match fixed {
        Some(k) => Stop::AtLeast(k.max(1)),
        None => Stop::Auto,
    };
    // Blocks of consecutive segments first, then their clusters together.
    let mut labels = vec![0; items.len()];
    let mut groups: Vec<Stats> = Vec::new();
    for (b, chunk) in items.chunks(BLOCK).enumerate() {
        let local = cluster_all(chunk, prior, t, block_stop);
        let base = groups.len();
        let k = local.iter().max().map_or(0, |m| m + 1);
        for _ in 0..k {
            groups.push(Stats::default());
        }
        for (i, &l) in local.iter().enumerate() {
            groups[base + l].merge(&chunk[i]);
            labels[b * BLOCK + i] = base + l;
        }
    }
    let top = agglomerate(&groups, prior, t, fixed);
    labels
        .iter()
        .map(|&g| top[g])
        .collect::<Vec<_>>()
        .renumbered()
}

/// When merging stops.
#[derive(Clone, Copy)]
enum Stop {
    /// The stopping rule (at most `MAX_SPEAKERS`).
    Auto,
    /// At exactly this many clusters.
    Count(usize),
    /// By the stopping rule, but never below this many.
    AtLeast(usize),
}

fn cluster_all(items: &[Stats], prior: &[f64; 78], t: &Tuning, stop: Stop) -> Vec<usize> {
    let n = items.len();
    let mut clusters: Vec<Option<(Stats, Vec<usize>)>> = items
        .iter()
        .enumerate()
        .map(|(i, s)| Some((s.clone(), vec![i])))
        .collect();
    let mut dist = vec![f64::INFINITY; n * n];
    for i in 0..n {
        for j in i + 1..n {
            dist[i * n + j] = distance(&items[i], &items[j], prior, t);
        }
    }
    let mut alive = n;
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for i in 0..n {
            if clusters[i].is_none() {
                continue;
            }
            for j in i + 1..n {
                if clusters[j].is_none() {
                    continue;
                }
                let d = dist[i * n + j];
                if best.is_none_or(|(b, _, _)| d < b) {
                    best = Some((d, i, j));
                }
            }
        }
        let Some((d, i, j)) = best else { break };
        let more = match stop {
            Stop::Auto => d <= t.threshold || alive > MAX_SPEAKERS,
            Stop::Count(k) => alive > k,
            Stop::AtLeast(k) => alive > k && (d <= t.threshold || alive > MAX_SPEAKERS),
        };
        if !more {
            break;
        }
        let Some((sj, mj)) = clusters[j].take() else {
            break;
        };
        if let Some((si, mi)) = clusters[i].as_mut() {
            si.merge(&sj);
            mi.extend(mj);
        }
        alive -= 1;
        for k in 0..n {
            if k == i || clusters[k].is_none() {
                continue;
            }
            let (Some((a, _)), Some((b, _))) = (&clusters[i.min(k)], &clusters[i.max(k)]) else {
                continue;
            };
            dist[i.min(k) * n + i.max(k)] = distance(a, b, prior, t);
        }
    }
    let mut labels = vec![0; n];
    for (c, cluster) in clusters.iter().enumerate() {
        if let Some((_, members)) = cluster {
            for &m in members {
                labels[m] = c;
            }
        }
    }
    labels.renumbered()
}

/// Labels numbered 0, 1, 2… in order of first appearance.
pub trait Renumber {
    fn renumbered(self) -> Vec<usize>;
}

impl Renumber for Vec<usize> {
    fn renumbered(self) -> Vec<usize> {
        let mut map = std::collections::HashMap::new();
        self.iter()
            .map(|l| {
                let next = map.len();
                *map.entry(*l).or_insert(next)
            })
            .collect()
    }
}

/// One word as the Viterbi pass sees it.
pub struct Token<'a> {
    pub stats: &'a Stats,
    /// A pause or a sentence end comes before this word (a cheap place for a change).
    pub boundary_before: bool,
}

/// The most likely speaker per word under the clusters' Gaussians, a change costing
/// `switch_at_boundary` at a boundary and `switch_inside` elsewhere. A word without voiced frames
/// scores the same under every speaker (it follows its neighbours).
pub fn viterbi(tokens: &[Token], models: &[Gaussian], t: &Tuning) -> Vec<usize> {
    let k = models.len();
    if k <= 1 || tokens.is_empty() {
        return vec![0; tokens.len()];
    }
    let mut score = vec![0.0f64; k];
    let mut back: Vec<Vec<u8>> = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        let emit: Vec<f64> = models.iter().map(|g| g.loglik(token.stats)).collect();
        let cost = if token.boundary_before {
            t.switch_at_boundary
        } else {
            t.switch_inside
        };
        let mut next = vec![0.0; k];
        let mut from = vec![0u8; k];
        for s in 0..k {
            if i == 0 {
                next[s] = emit[s];
                continue;
            }
            let (mut best, mut arg) = (score[s], s);
            for (p, &v) in score.iter().enumerate() {
                if p != s && v - cost > best {
                    best = v - cost;
                    arg = p;
                }
            }
            next[s] = best + emit[s];
            from[s] = arg as u8;
        }
        // Keep the scores near zero (long recordings).
        let top = next.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if top.is_finite() {
            next.iter_mut().for_each(|v| *v -= top);
        }
        score = next;
        back.push(from);
    }
    let mut s = (0..k)
        .max_by(|&a, &b| score[a].total_cmp(&score[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let mut out = vec![0; tokens.len()];
    for t in (0..tokens.len()).rev() {
        out[t] = s;
        if t > 0 {
            s = back[t][s] as usize;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::speakers::stats::synthetic as segment;
    use proptest::prelude::*;

    fn prior(items: &[Stats]) -> [f64; 78] {
        let mut all = Stats::default();
        items.iter().for_each(|s| all.merge(s));
        all.plain_covariance()
    }

    fn same_partition(a: &[usize], b: &[usize]) -> bool {
        a.len() == b.len()
            && (0..a.len()).all(|i| (0..a.len()).all(|j| (a[i] == a[j]) == (b[i] == b[j])))
    }

    #[test]
    fn one_voice_stays_one_cluster_however_long() {
        for n in [2, 10, 60] {
            let items: Vec<Stats> = (0..n).map(|i| segment(0, 150, i as u64 + 1)).collect();
            let labels = agglomerate(&items, &prior(&items), &Tuning::default(), None);
            assert!(labels.iter().all(|&l| l == 0), "{n} segments: {labels:?}");
        }
    }

    #[test]
    fn a_fixed_count_gives_that_many_clusters_whatever_the_voices() {
        let one: Vec<Stats> = (0..10).map(|i| segment(0, 150, i as u64 + 1)).collect();
        let two: Vec<Stats> = (0..12)
            .map(|i| segment([1, 0, 0, 1][i % 4], 120, i as u64 + 5))
            .collect();
        let t = Tuning::default();
        let count = |l: &[usize]| l.iter().max().map_or(0, |m| m + 1);
        assert_eq!(count(&agglomerate(&one, &prior(&one), &t, Some(2))), 2);
        assert_eq!(count(&agglomerate(&one, &prior(&one), &t, Some(3))), 3);
        assert_eq!(agglomerate(&two, &prior(&two), &t, Some(1)), vec![0; 12]);
        // Two voices asked for two: the same as found without a count.
        assert_eq!(
            agglomerate(&two, &prior(&two), &t, Some(2)),
            agglomerate(&two, &prior(&two), &t, None)
        );
        // More asked for than there are segments: one cluster each.
        assert_eq!(count(&agglomerate(&one[..2], &prior(&one), &t, Some(5))), 2);
    }

    #[test]
    fn two_voices_give_two_clusters_numbered_by_first_appearance() {
        let items: Vec<Stats> = (0..12)
            .map(|i| segment([1, 0, 0, 1][i % 4], 120, i as u64 + 5))
            .collect();
        let labels = agglomerate(&items, &prior(&items), &Tuning::default(), None);
        assert_eq!(labels, vec![0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn input_order_does_not_change_the_partition(
            voices in proptest::collection::vec(0usize..3, 2..14),
            seed in 1u64..1000,
            rotate in 0usize..14,
        ) {
            let items: Vec<Stats> = voices
                .iter()
                .enumerate()
                .map(|(i, &v)| segment(v, 100, seed + i as u64))
                .collect();
            let p = prior(&items);
            let labels = agglomerate(&items, &p, &Tuning::default(), None);
            let r = rotate % items.len();
            let mut order: Vec<usize> = (0..items.len()).collect();
            order.rotate_left(r);
            order.reverse();
            let shuffled: Vec<Stats> = order.iter().map(|&i| items[i].clone()).collect();
            let back = agglomerate(&shuffled, &p, &Tuning::default(), None);
            let mut unshuffled = vec![0; items.len()];
            for (pos, &i) in order.iter().enumerate() {
                unshuffled[i] = back[pos];
            }
            prop_assert!(same_partition(&labels, &unshuffled), "{labels:?} vs {unshuffled:?}");
        }
    }

    #[test]
    fn a_one_word_backchannel_of_the_other_voice_is_kept_and_no_phantom_appears() {
        let a = segment(0, 2000, 1);
        let b = segment(1, 2000, 2);
        let p = prior(&[a.clone(), b.clone()]);
        let models = vec![
            Gaussian::from(&a, &p, Tuning::default().tau).unwrap(),
            Gaussian::from(&b, &p, Tuning::default().tau).unwrap(),
        ];
        let words: Vec<Stats> = [0, 0, 0, 1, 0, 0, 0]
            .iter()
            .enumerate()
            .map(|(i, &v)| segment(v, 30, 100 + i as u64))
            .collect();
        let tokens: Vec<Token> = words
            .iter()
            .enumerate()
            .map(|(i, s)| Token {
                stats: s,
                boundary_before: i == 3 || i == 4,
            })
            .collect();
        assert_eq!(
            viterbi(&tokens, &models, &Tuning::default()),
            vec![0, 0, 0, 1, 0, 0, 0]
        );
        // A word without voiced frames (a whisper, a clipped word) follows its neighbours.
        let empty = Stats::default();
        let mut inside: Vec<Token> = tokens
            .iter()
            .map(|t| Token {
                stats: t.stats,
                boundary_before: t.boundary_before,
            })
            .collect();
        inside[3].stats = &empty;
        assert_eq!(viterbi(&inside, &models, &Tuning::default()), vec![0; 7]);
    }
}
