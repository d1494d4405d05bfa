//! Find and replace over a transcript's words (issue 22, item 6): a phrase is found in the words'
//! texts joined by one space (so it may span several words and several cues' words), its own
//! whitespace folded to one space; case-insensitive unless asked (each character folded by
//! `char::to_lowercase` when that is one character), and with "whole word" only where neither
//! neighbour of the match is a letter or a digit. Matches do not overlap, first one first. The
//! page's `findMatches` (editor.js) follows the same rules, so its count, highlight and preview
//! are the server's.

use cuecraft_engine::{Break, Millis, Word};

/// What to find.
pub struct Query {
    /// The phrase's characters, whitespace folded to one space, trimmed (folded to lower case
    /// when not case-sensitive).
    phrase: Vec<char>,
    case_sensitive: bool,
    whole_word: bool,
}

impl Query {
    /// A query for `phrase`; `None` when it has nothing but whitespace.
    pub fn new(phrase: &str, case_sensitive: bool, whole_word: bool) -> Option<Query> {
        let folded = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
        if folded.is_empty() {
            return None;
        }
        Some(Query {
            phrase: folded.chars().map(|c| fold(c, case_sensitive)).collect(),
            case_sensitive,
            whole_word,
        })
    }
}

/// One match: the words it touches (`first..=last`) and its characters in the joined text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub first: usize,
    pub last: usize,
    pub from: usize,
    pub to: usize,
}

fn fold(c: char, case_sensitive: bool) -> char {
    if case_sensitive {
        return c;
    }
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// The words' texts joined by one space, and for each character the word it belongs to (a
/// space: the word before it).
fn joined(words: &[Word]) -> (Vec<char>, Vec<usize>) {
    let mut chars = Vec::new();
    let mut owner = Vec::new();
    for (k, w) in words.iter().enumerate() {
        if k > 0 {
            chars.push(' ');
            owner.push(k - 1);
        }
        for c in w.text.chars() {
            chars.push(c);
            owner.push(k);
        }
    }
    (chars, owner)
}

/// Every match of `q` in `words`, in order (the page counts them itself; the tests ask here).
#[cfg(test)]
pub fn find(words: &[Word], q: &Query) -> Vec<Match> {
    let (chars, owner) = joined(words);
    find_in(&chars, &owner, q)
}

fn find_in(chars: &[char], owner: &[usize], q: &Query) -> Vec<Match> {
    let folded: Vec<char> = chars.iter().map(|&c| fold(c, q.case_sensitive)).collect();
    let m = q.phrase.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i + m <= folded.len() {
        let hit = folded[i..i + m] == q.phrase[..]
            && (!q.whole_word
                || ((i == 0 || !is_word_char(chars[i - 1]))
                    && chars.get(i + m).is_none_or(|&c| !is_word_char(c))));
        if hit {
            out.push(Match {
                first: owner[i],
                last: owner[i + m - 1],
                from: i,
                to: i + m,
            });
            i += m;
        } else {
            i += 1;
        }
    }
    out
}

/// Replaces every match of `q` in `words` with `with`: the words a match touches take the text
/// they have with the match replaced (`align_text`: a word whose text stays keeps everything,
/// new words share the replaced words' time). A cue break inside a replaced run of words stays
/// at the same time (after the new word that ends before it), so a phrase across two cues leaves
/// two cues. Returns the number of matches.
pub fn replace(words: &mut Vec<Word>, q: &Query, with: &str) -> usize {
    let (chars, owner) = joined(words);
    let found = find_in(&chars, &owner, q);
    // Runs of words touched by matches, a run's matches together.
    let mut runs: Vec<(usize, usize, Vec<Match>)> = Vec::new();
    for m in &found {
        match runs.last_mut() {
            Some(run) if m.first <= run.1 => {
                run.1 = run.1.max(m.last);
                run.2.push(*m);
            }
            _ => runs.push((m.first, m.last, vec![*m])),
        }
    }
    // The character where each word starts in the joined text.
    let mut starts = Vec::with_capacity(words.len());
    let mut at = 0;
    for w in words.iter() {
        starts.push(at);
        at += w.text.chars().count() + 1;
    }
    for (a, b, ms) in runs.into_iter().rev() {
        let end = starts[b] + words[b].text.chars().count();
        let mut text = String::new();
        let mut pos = starts[a];
        for m in &ms {
            text.extend(&chars[pos..m.from]);
            text.push_str(with);
            pos = m.to;
        }
        text.extend(&chars[pos..end]);
        let lo = if a > 0 {
            words[a - 1].end
        } else {
            Millis::ZERO
        };
        let hi = words.get(b + 1).map_or(words[b].end, |w| w.start);
        let old = &words[a..=b];
        let mut new = super::super::align_text(old, &text, lo, hi);
        keep_inner_cue_breaks(old, &mut new);
        words.splice(a..=b, new);
    }
    found.len()
}

/// Puts back a cue break inside `old` (not after its last word) that the aligned `new` words
/// lost, after the last new word (but the last) ending by the old break's time.
fn keep_inner_cue_breaks(old: &[Word], new: &mut [Word]) {
    let is_cue = |w: &Word| matches!(w.break_after, Some(Break::Cue | Break::Timed));
    let inner = |ws: &[Word]| {
        ws[..ws.len().saturating_sub(1)]
            .iter()
            .filter(|w| is_cue(w))
            .count()
    };
    if new.len() < 2 || inner(new) >= inner(old) {
        return;
    }
    for w in &old[..old.len() - 1] {
        if !is_cue(w) || new.iter().any(|n| is_cue(n) && n.end == w.end) {
            continue;
        }
        let k = new[..new.len() - 1]
            .iter()
            .rposition(|n| n.end <= w.end)
            .unwrap_or(0);
        if !is_cue(&new[k]) {
            // Of the same kind: a cue timed by hand stays so.
            new[k].break_after = w.break_after;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(texts: &[&str]) -> Vec<Word> {
        texts
            .iter()
            .enumerate()
            .map(|(k, t)| Word::new(*t, Millis(k as i64 * 500), Millis(k as i64 * 500 + 400), 0))
            .collect()
    }

    fn text(w: &[Word]) -> String {
        w.iter().map(|w| &*w.text).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_phrase_is_found_across_words_with_case_and_whole_word_options() {
        let w = words(&["The", "cat", "sat.", "Then", "the", "catalogue"]);
        let q = |p: &str, c: bool, ww: bool| Query::new(p, c, ww).expect("query");
        let spans = |q: &Query| {
            find(&w, q)
                .iter()
                .map(|m| (m.first, m.last))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans(&q("the  cat", false, false)), [(0, 1), (4, 5)]);
        assert_eq!(spans(&q("the cat", true, false)), [(4, 5)]);
        assert_eq!(spans(&q("the cat", false, true)), [(0, 1)]);
        assert_eq!(spans(&q("sat. then", false, true)), [(2, 3)]);
        assert_eq!(spans(&q("cat", true, true)), [(1, 1)]);
        assert_eq!(spans(&q("CAT", true, false)), []);
        assert!(Query::new("  ", false, false).is_none());
    }

    #[test]
    fn replace_changes_only_the_matches_and_keeps_the_times_and_cue_breaks() {
        let mut w = words(&["one", "big", "dog.", "Big", "dog", "barks"]);
        w[2].break_after = Some(Break::Cue);
        w[5].break_after = Some(Break::Cue);
        let before = w.clone();
        let q = Query::new("big dog", false, true).expect("query");
        assert_eq!(replace(&mut w, &q, "small cat"), 2);
        assert_eq!(text(&w), "one small cat. small cat barks");
        // Same word count: every word keeps its time and its break.
        for (a, b) in w.iter().zip(&before) {
            assert_eq!(
                (a.start, a.end, a.break_after),
                (b.start, b.end, b.break_after)
            );
        }
        // A phrase across the cue break, replaced by fewer words: still two cues.
        let mut w = before.clone();
        let q = Query::new("dog. Big", true, false).expect("query");
        assert_eq!(replace(&mut w, &q, "dog. Huge"), 1);
        assert_eq!(text(&w), "one big dog. Huge dog barks");
        assert_eq!(w[2].break_after, Some(Break::Cue));
        let mut w = before.clone();
        let q = Query::new("big dog. Big", true, false).expect("query");
        assert_eq!(replace(&mut w, &q, "hound. A"), 1);
        assert_eq!(text(&w), "one hound. A dog barks");
        assert_eq!(
            w.iter()
                .filter(|w| w.break_after == Some(Break::Cue))
                .count(),
            2
        );
        assert_eq!(w[1].break_after, Some(Break::Cue));
        // Inside one word, several times.
        let mut w = words(&["foo", "bar"]);
        let q = Query::new("o", true, false).expect("query");
        assert_eq!(replace(&mut w, &q, "0"), 2);
        assert_eq!(text(&w), "f00 bar");
        assert_eq!((w[0].start, w[0].end), (Millis(0), Millis(400)));
    }
}
