//! Aligning an edited cue text onto the stored words it replaces, so that timings survive an
//! edit: the words are never rebuilt from the page's markup.
//!
//! The new text is split at whitespace into tokens, and the tokens are matched to the old words by
//! a longest common subsequence on their exact text. A matched word is kept as it was (timing,
//! speaker, manual break). Between two matches, old words and new tokens that pair up one to one
//! keep the old words' timings with the new text; otherwise the new tokens share the old words'
//! time span by their length in characters; inserted tokens without old words share the silence
//! between their neighbours. So an edit that changes nothing changes no word, every unchanged word
//! keeps its timing, and words stay in time order.

use cuecraft_engine::{Millis, Word};

/// The largest old-words x tokens table the exact alignment builds; beyond it (an edit pasting a
/// very long text into one cue) only the common prefix and suffix are kept.
const MAX_CELLS: usize = 1 << 22;

/// The words that replace `old` (one cue's words, in time order) when its text becomes
/// `new_text`. `lo` and `hi` bound the time inserted words may take when the cue has no words
/// left to share (the previous word's end and the next word's start).
pub fn align_text(old: &[Word], new_text: &str, lo: Millis, hi: Millis) -> Vec<Word> {
    let tokens: Vec<&str> = new_text.split_whitespace().collect();
    let pairs = matches(old, &tokens);
    let mut out: Vec<Word> = Vec::with_capacity(tokens.len());
    let (mut i, mut j) = (0usize, 0usize);
    for &(mi, mj) in pairs
        .iter()
        .chain(std::iter::once(&(old.len(), tokens.len())))
    {
        fill_gap(old, &tokens, (i, mi), (j, mj), lo, hi, &mut out);
        if mi < old.len() && mj < tokens.len() {
            out.push(old[mi].clone());
        }
        i = mi + 1;
        j = mj + 1;
    }
    out
}

/// Indexes (old, token) of the longest common subsequence of equal texts, in order.
fn matches(old: &[Word], tokens: &[&str]) -> Vec<(usize, usize)> {
    let (n, m) = (old.len(), tokens.len());
    let mut pre = 0;
    while pre < n && pre < m && *old[pre].text == *tokens[pre] {
        pre += 1;
    }
    let mut suf = 0;
    while suf < n - pre && suf < m - pre && *old[n - 1 - suf].text == *tokens[m - 1 - suf] {
        suf += 1;
    }
    let mut out: Vec<(usize, usize)> = (0..pre).map(|k| (k, k)).collect();
    let (a, b) = (&old[pre..n - suf], &tokens[pre..m - suf]);
    if !a.is_empty() && !b.is_empty() && (a.len() + 1) * (b.len() + 1) <= MAX_CELLS {
        // lcs[x][y] = LCS length of a[x..] and b[y..].
        let w = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * w];
        for x in (0..a.len()).rev() {
            for y in (0..b.len()).rev() {
                lcs[x * w + y] = if *a[x].text == *b[y] {
                    lcs[(x + 1) * w + y + 1] + 1
                } else {
                    lcs[(x + 1) * w + y].max(lcs[x * w + y + 1])
                };
            }
        }
        let (mut x, mut y) = (0, 0);
        while x < a.len() && y < b.len() {
            if *a[x].text == *b[y] {
                out.push((pre + x, pre + y));
                x += 1;
                y += 1;
            } else if lcs[(x + 1) * w + y] >= lcs[x * w + y + 1] {
                x += 1;
            } else {
                y += 1;
            }
        }
    }
    out.extend((0..suf).map(|k| (n - suf + k, m - suf + k)));
    out
}

/// Words for tokens `tj.0..tj.1` replacing old words `oi.0..oi.1`.
fn fill_gap(
    old: &[Word],
    tokens: &[&str],
    oi: (usize, usize),
    tj: (usize, usize),
    lo: Millis,
    hi: Millis,
    out: &mut Vec<Word>,
) {
    let gone = &old[oi.0..oi.1];
    let new = &tokens[tj.0..tj.1];
    if new.is_empty() {
        // Deleted words: a manual cue break on the last of them moves to the word before.
        if let Some(b) = gone.last().and_then(|w| w.break_after) {
            if let Some(prev) = out.last_mut() {
                if prev.break_after.is_none() {
                    prev.break_after = Some(b);
                }
            }
        }
        return;
    }
    if gone.len() == new.len() {
        for (w, t) in gone.iter().zip(new) {
            let mut w = w.clone();
            w.text = (*t).into();
            out.push(w);
        }
        return;
    }
    let prev_end = out.last().map(|w| w.end);
    let next_start = old.get(oi.1).map(|w| w.start);
    let (start, end, speaker, last_break) = match (gone.first(), gone.last()) {
        (Some(f), Some(l)) => (f.start, l.end, f.speaker, l.break_after),
        _ => {
            let start = prev_end.unwrap_or(lo).max(lo);
            let end = next_start.unwrap_or(hi).min(hi).max(start);
            let speaker = out
                .last()
                .map(|w| w.speaker)
                .or_else(|| old.get(oi.1).map(|w| w.speaker))
                .unwrap_or(0);
            (start, end, speaker, None)
        }
    };
    let lens: Vec<i64> = new
        .iter()
        .map(|t| t.chars().count().max(1) as i64)
        .collect();
    let total: i64 = lens.iter().sum();
    let span = (end.0 - start.0).max(0);
    let mut acc = 0i64;
    for (k, t) in new.iter().enumerate() {
        let s = start.0 + span * acc / total;
        acc += lens[k];
        let e = start.0 + span * acc / total;
        let mut w = Word::new(*t, Millis(s), Millis(e), speaker);
        if k + 1 == new.len() {
            w.break_after = last_break;
        }
        out.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuecraft_engine::Break;
    use proptest::prelude::*;

    fn w(t: &str, s: i64, e: i64) -> Word {
        Word::new(t, Millis(s), Millis(e), 0)
    }

    fn text(words: &[Word]) -> String {
        words.iter().map(|w| &*w.text).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_corrected_word_keeps_its_timing() {
        let old = vec![w("the", 0, 200), w("quik", 200, 500), w("fox", 600, 900)];
        let new = align_text(&old, "the quick fox", Millis(0), Millis(1000));
        assert_eq!(text(&new), "the quick fox");
        assert_eq!((new[1].start, new[1].end), (Millis(200), Millis(500)));
        assert_eq!(new[0], old[0]);
        assert_eq!(new[2], old[2]);
    }

    #[test]
    fn inserted_words_share_the_time_of_what_they_replace_or_the_silence() {
        let old = vec![w("hello", 0, 400), w("world", 1000, 1400)];
        let new = align_text(&old, "hello big wide world", Millis(0), Millis(2000));
        assert_eq!(text(&new), "hello big wide world");
        assert_eq!((new[1].start, new[2].end), (Millis(400), Millis(1000)));
        assert!(new[1].end <= new[2].start);
        let new = align_text(&old, "hello there world", Millis(0), Millis(2000));
        assert_eq!(new[1].start, Millis(400));
        let old = vec![w("gonna", 0, 600)];
        let new = align_text(&old, "going to", Millis(0), Millis(600));
        assert_eq!(
            new.iter().map(|w| (w.start.0, w.end.0)).collect::<Vec<_>>(),
            [(0, 428), (428, 600)]
        );
    }

    #[test]
    fn a_deleted_words_cue_break_moves_to_the_word_before() {
        let mut old = vec![w("a", 0, 100), w("um", 100, 200)];
        old[1].break_after = Some(Break::Cue);
        let new = align_text(&old, "a", Millis(0), Millis(300));
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].break_after, Some(Break::Cue));
        assert!(align_text(&old, "  ", Millis(0), Millis(300)).is_empty());
    }

    fn words_strategy() -> impl Strategy<Value = Vec<Word>> {
        prop::collection::vec(("[a-d]{1,3}", 0i64..300, 0i64..300), 0..12).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(text, gap, dur)| {
                    t += gap;
                    let s = t;
                    t += dur;
                    Word::new(text, Millis(s), Millis(t), 0)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn unchanged_text_changes_no_word(old in words_strategy()) {
            let new = align_text(&old, &text(&old), Millis(0), Millis(10_000));
            prop_assert_eq!(new, old);
        }

        #[test]
        fn edits_keep_unchanged_words_and_time_order(
            old in words_strategy(),
            edit in prop::collection::vec("[a-e]{1,3}", 0..14),
        ) {
            let hi = old.last().map(|w| w.end.0).unwrap_or(0) + 500;
            let new_text = edit.join(" ");
            let new = align_text(&old, &new_text, Millis(0), Millis(hi));
            prop_assert_eq!(text(&new), new_text.split_whitespace().collect::<Vec<_>>().join(" "));
            // Time order: starts never go back, and every word ends after it starts.
            for pair in new.windows(2) {
                prop_assert!(pair[0].start <= pair[1].start);
                prop_assert!(pair[0].end <= pair[1].start);
            }
            for x in &new {
                prop_assert!(x.start <= x.end);
            }
            // Every word of the common subsequence is kept whole: timing included.
            let kept: Vec<&Word> = new.iter().filter(|n| old.iter().any(|o| o == *n)).collect();
            let lcs = matches(&old, &new_text.split_whitespace().collect::<Vec<_>>()).len();
            prop_assert!(kept.len() >= lcs);
        }
    }
}
