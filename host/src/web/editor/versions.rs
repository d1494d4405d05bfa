//! Versions in sync (issue 22, item 7): an edit of the original carried to the clean version
//! (`{"op": "carry"}`, the same words there), and the translation cues whose source (the
//! original's words over the same time) changed since the translation was made or the cue was
//! last edited.

use cuecraft_engine::Word;
use serde_json::Value;

use crate::words::decode;

use super::super::WebError;

/// A word's text as compared across versions: lower case, letters and digits only (the clean
/// version mends capitals and punctuation around the fillers it removes).
fn norm(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// One revision's splice: `(from, remove, insert)`; `None` for a whole word list or an entry
/// that is not a splice.
fn splice_of(entry: &str) -> Option<(usize, usize, Vec<Word>)> {
    if !entry.starts_with('{') {
        return None;
    }
    let v: Value = serde_json::from_str(entry).ok()?;
    let from = usize::try_from(v.get("from")?.as_u64()?).ok()?;
    let remove = usize::try_from(v.get("remove")?.as_u64()?).ok()?;
    let insert = decode(&v.get("insert")?.to_string())?;
    Some((from, remove, insert))
}

/// The words a splice changed the text of: `old` (removed) and `new` (inserted) without the
/// words at either end whose text stayed (a pinned text edit replaces the whole cue's words).
fn changed_text<'a>(old: &'a [Word], new: &'a [Word]) -> (usize, &'a [Word], &'a [Word]) {
    let same = |a: &Word, b: &Word| a.text == b.text;
    let head = old.iter().zip(new).take_while(|(a, b)| same(a, b)).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| same(a, b))
        .count();
    (
        head,
        &old[head..old.len() - tail],
        &new[head..new.len() - tail],
    )
}

/// The time spans whose words' text each revision of a history changed: `(revision, start ms,
/// end ms)` for every revision after the first whose splice changed a word's text (a split, a
/// line break, a time or a settings change changes none). `entries` are revisions 0 to n.
pub fn text_changes(entries: &[String]) -> Vec<(usize, i64, i64)> {
    let Some((first, rest)) = entries.split_first() else {
        return Vec::new();
    };
    let Some(mut words) = decode(first) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, entry) in rest.iter().enumerate() {
        let Some((from, remove, insert)) = splice_of(entry) else {
            if let Some(all) = entry.starts_with('[').then(|| decode(entry)).flatten() {
                words = all;
            }
            continue;
        };
        let Some(end) = from.checked_add(remove).filter(|&e| e <= words.len()) else {
            break;
        };
        let (at, old, new) = changed_text(&words[from..end], &insert);
        if !old.is_empty() || !new.is_empty() {
            // An insertion between two words: the time between them.
            let before = (from + at).checked_sub(1).and_then(|i| words.get(i));
            let after = words.get(from + at + old.len());
            let lo = old
                .iter()
                .chain(new)
                .map(|w| w.start.0)
                .min()
                .or(before.map(|w| w.end.0))
                .unwrap_or(0);
            let hi = old
                .iter()
                .chain(new)
                .map(|w| w.end.0)
                .max()
                .or(after.map(|w| w.start.0))
                .unwrap_or(lo);
            out.push((k + 1, lo, hi.max(lo)));
        }
        words.splice(from..end, insert);
    }
    out
}

/// Whether a change over `[lo, hi]` (ms) touches a cue showing `[s, e]`: they overlap, or an
/// instant change lies inside the cue.
fn touches((lo, hi): (i64, i64), (s, e): (i64, i64)) -> bool {
    lo < e && s < hi || (lo == hi && s <= lo && lo <= e)
}

/// For each of a translation's cues (its words' time `[s, e]`): whether the original's text
/// over that time changed after the translation was made and after the translation last changed
/// the text there. `original`: the original's text changes with the time of each revision;
/// `own`: the translation's; `made`: when the translation was added (ms).
pub fn source_changed(
    cues: &[(i64, i64)],
    original: &[(i64, i64, i64)],
    own: &[(i64, i64, i64)],
    made: i64,
) -> Vec<bool> {
    cues.iter()
        .map(|&span| {
            let reviewed = own
                .iter()
                .filter(|c| touches((c.1, c.2), span))
                .map(|c| c.0)
                .fold(made, i64::max);
            original
                .iter()
                .any(|c| c.0 > reviewed && touches((c.1, c.2), span))
        })
        .collect()
}

/// [`source_changed`] for translation `own` (id, revision, made at ms) beside the original
/// `source` (id, revision), its cues' word times `spans`, from the two histories.
pub fn marks(
    c: &dyn crate::store::Store,
    source: (&str, i64),
    own: (&str, i64),
    made: i64,
    spans: &[(i64, i64)],
) -> Result<Vec<bool>, WebError> {
    let changes = |(id, revision): (&str, i64)| -> Result<Vec<(i64, i64, i64)>, WebError> {
        if revision == 0 {
            return Ok(Vec::new());
        }
        let times: std::collections::HashMap<i64, i64> = c
            .revisions(id)?
            .into_iter()
            .map(|r| (r.revision, r.created_at))
            .collect();
        Ok(text_changes(&c.revision_entries(id, revision)?)
            .into_iter()
            .filter_map(|(k, lo, hi)| Some((*times.get(&(k as i64))?, lo, hi)))
            .collect())
    };
    let original = changes(source)?;
    if original.is_empty() {
        return Ok(vec![false; spans.len()]);
    }
    Ok(source_changed(spans, &original, &changes(own)?, made))
}

/// `{"op": "carry", "sourceRevision": r}` on the clean version's `words`: revision `r` of the
/// original (its history `entries`, revisions 0 to `r`) changed the text of some words; the
/// same words in the clean version (same times, same text but for capitals and punctuation)
/// get the original's new words, each keeping the break the clean version had there. Refused,
/// saying why, when that revision changed no text or the clean version does not have those
/// words (a filler removed between them, or text already changed there).
pub fn carry(words: &mut Vec<Word>, entries: &[String]) -> Result<String, WebError> {
    let refuse = |m: &str| Err(WebError::BadRequest(m.into()));
    let Some((last, history)) = entries.split_last().filter(|(_, h)| !h.is_empty()) else {
        return refuse("That revision of the original is not there.");
    };
    let (Some(before), Some((from, remove, insert))) =
        (super::entries::replay(history), splice_of(last))
    else {
        return refuse("That revision of the original did not change words.");
    };
    let Some(end) = from.checked_add(remove).filter(|&e| e <= before.len()) else {
        return refuse("That revision of the original did not change words.");
    };
    let (at, old, new) = changed_text(&before[from..end], &insert);
    if old.is_empty() && new.is_empty() {
        return refuse("That edit of the original changed no words' text.");
    }
    let same =
        |a: &Word, b: &Word| a.start == b.start && a.end == b.end && norm(&a.text) == norm(&b.text);
    let missing = "The clean version does not have the same words there (a filler was removed \
                   or the text was changed there): edit it by hand.";
    let (lo, hi) = if let Some(first) = old.first() {
        let lo = (0..words.len())
            .find(|&k| {
                same(&words[k], first)
                    && old
                        .iter()
                        .enumerate()
                        .all(|(j, o)| words.get(k + j).is_some_and(|w| same(w, o)))
            })
            .ok_or_else(|| WebError::BadRequest(missing.into()))?;
        (lo, lo + old.len())
    } else {
        // Words typed in: after the word before them (or before the word after them).
        let prev = (from + at).checked_sub(1).map(|i| &before[i]);
        let spot = match prev {
            Some(p) => words.iter().position(|w| same(w, p)).map(|k| k + 1),
            None => before
                .get(from + at)
                .and_then(|n| words.iter().position(|w| same(w, n))),
        };
        let k = spot.ok_or_else(|| WebError::BadRequest(missing.into()))?;
        (k, k)
    };
    let mut put: Vec<Word> = new.to_vec();
    for w in &mut put {
        w.break_after = None;
    }
    // The clean version's break after the run (its cue or line end) stays where it was.
    let kept = if hi > lo {
        words[hi - 1].break_after
    } else {
        None
    };
    match (put.last_mut(), kept) {
        (Some(w), b) => w.break_after = b,
        (None, Some(b)) => {
            if let Some(w) = lo.checked_sub(1).and_then(|k| words.get_mut(k)) {
                w.break_after.get_or_insert(b);
            }
        }
        (None, None) => {}
    }
    let n = old.len().max(new.len());
    words.splice(lo..hi, put);
    Ok(format!(
        "Carried an edit of the original ({n} word{})",
        if n == 1 { "" } else { "s" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::entries::splice_diff;
    use crate::web::editor::ops::apply_op;
    use crate::words::encode;
    use cuecraft_engine::Millis;
    use serde_json::json;

    fn words(texts: &[(&str, i64)]) -> Vec<Word> {
        texts
            .iter()
            .map(|&(t, s)| Word::new(t, Millis(s), Millis(s + 300), 0))
            .collect()
    }

    #[test]
    fn an_edit_of_the_original_reaches_the_same_words_of_the_clean_version() {
        let original = words(&[
            ("Um,", 0),
            ("so", 400),
            ("we", 800),
            ("bought", 1200),
            ("flower.", 1600),
        ]);
        let clean = words(&[
            ("So", 400),
            ("we", 800),
            ("bought", 1200),
            ("flower.", 1600),
        ]);
        let mut edited = original.clone();
        apply_op(
            &mut edited,
            &json!({"op": "text", "from": 0, "to": 5, "text": "Um, so we bought flour."}),
        )
        .expect("edit");
        let entries = vec![encode(&original), splice_diff(&original, &edited)];
        assert_eq!(text_changes(&entries), vec![(1, 1600, 1900)]);
        let mut carried = clean.clone();
        carry(&mut carried, &entries).expect("carried");
        let texts: Vec<&str> = carried.iter().map(|w| &*w.text).collect();
        assert_eq!(texts, ["So", "we", "bought", "flour."]);
        assert_eq!(
            carried[..3],
            clean[..3],
            "the other words stay as they were"
        );
        // A revision that changed no text is refused; so is one whose words the clean lacks.
        let mut split = edited.clone();
        apply_op(&mut split, &json!({"op": "split", "at": 3})).expect("split");
        let entries2 = vec![encode(&edited), splice_diff(&edited, &split)];
        assert!(text_changes(&entries2).is_empty());
        assert!(carry(&mut clean.clone(), &entries2).is_err());
        let mut filler = original.clone();
        apply_op(
            &mut filler,
            &json!({"op": "text", "from": 0, "to": 2, "text": "Uh, so"}),
        )
        .expect("edit");
        let entries3 = vec![encode(&original), splice_diff(&original, &filler)];
        assert!(carry(&mut clean.clone(), &entries3).is_err());
    }

    #[test]
    fn a_translation_cue_is_marked_when_its_source_changed_after_it_was_last_edited() {
        // Cues at 0-1 s, 1-2 s, 2-3 s; the translation made at t=10.
        let cues = [(0, 1000), (1000, 2000), (2000, 3000)];
        // The original changed text at 1.2-1.5 s at t=20 and at 0.2 s at t=5 (before it was made).
        let original = [(5, 200, 400), (20, 1200, 1500)];
        assert_eq!(
            source_changed(&cues, &original, &[], 10),
            [false, true, false]
        );
        // Editing the second cue's text at t=30 is a review of it.
        assert_eq!(
            source_changed(&cues, &original, &[(30, 1000, 1800)], 10),
            [false, false, false]
        );
        // An edit before the change does not clear it.
        assert_eq!(
            source_changed(&cues, &original, &[(15, 1000, 1800)], 10),
            [false, true, false]
        );
    }
}
