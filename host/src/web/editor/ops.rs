//! The edit operations on a transcript's stored words (`apply_op`): text, split, merge, line
//! break, move a word, speaker (`speakers`), replace (timing is `timing`). Each answers the note the history
//! shows.

use cuecraft_engine::{Break, Millis, Word};
use serde_json::Value;

use super::super::WebError;
use super::usize_field;

/// Applies one edit operation to `words`; the note for the history. A cue timed by hand
/// (`Break::Timed` after its last word) stays so: a cue break the operations move or make takes
/// the kind of the cue it cuts (a split cue's halves, a cue that gives or takes a word), and a
/// merged cue keeps the second cue's.
pub fn apply_op(words: &mut Vec<Word>, op: &Value) -> Result<String, WebError> {
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
    let range = |words: &Vec<Word>| -> Result<(usize, usize), WebError> {
        let from = usize_field(op, "from")?;
        let to = usize_field(op, "to")?;
        if from >= to || to > words.len() {
            return Err(WebError::BadRequest(
                "The cue's words are out of range.".into(),
            ));
        }
        Ok((from, to))
    };
    match kind {
        "text" => {
            let (from, to) = range(words)?;
            let text = op
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| WebError::BadRequest("`text` must be a string.".into()))?;
            if text.len() > 10_000 {
                return Err(WebError::BadRequest(
                    "The text is too long for one cue.".into(),
                ));
            }
            let lo = if from > 0 {
                words[from - 1].end
            } else {
                Millis::ZERO
            };
            let hi = words.get(to).map(|w| w.start).unwrap_or(words[to - 1].end);
            if pinned(words) {
                // The cue keeps its time: new words share it, and its end stays its own.
                let lo = words[from].start;
                let hi = words[from..to].iter().map(|w| w.end).max().unwrap_or(lo);
                let ends_cue = words[from..to].iter().rev().find_map(cue_break);
                let mut new = super::super::align_text(&words[from..to], text, lo, hi);
                for w in &mut new {
                    if cue_break(w).is_some() {
                        w.break_after = None;
                    }
                }
                // The cue keeps its time on screen: its first word starts where the first did
                // and its last ends where the last did, whichever words those now are.
                if let Some(w) = new.iter_mut().find(|w| !w.text.trim().is_empty()) {
                    w.start = lo;
                }
                if let Some(w) = new.iter_mut().rev().find(|w| !w.text.trim().is_empty()) {
                    w.end = hi.max(w.start);
                }
                if let Some(b) = ends_cue {
                    let last = new.iter().rposition(|w| !w.text.trim().is_empty());
                    if let Some(w) = last.and_then(|k| new.get_mut(k)) {
                        w.break_after = Some(b);
                    }
                }
                words.splice(from..to, new);
                keep_pinned(words);
                return Ok("Edited text".into());
            }
            let new = super::super::align_text(&words[from..to], text, lo, hi);
            words.splice(from..to, new);
            Ok("Edited text".into())
        }
        "merge" => {
            // The merged cue's words [from, to) (the two cues), `at` the first of the second: a
            // join after each but the last (a manual split goes; a manual line break stays), so
            // the layout keeps them one cue within its hard limits (`edit` refuses the merge when
            // it cannot).
            let at = usize_field(op, "at")?;
            let from = op
                .get("from")
                .map(|_| usize_field(op, "from"))
                .transpose()?;
            let to = op.get("to").map(|_| usize_field(op, "to")).transpose()?;
            let (from, to) = (from.unwrap_or(at.saturating_sub(1)), to.unwrap_or(at + 1));
            if at == 0 || at >= words.len() || from >= at || to <= at || to > words.len() {
                return Err(WebError::BadRequest(
                    "There is no word boundary there.".into(),
                ));
            }
            if pinned(words) {
                // Exactly the two cues, each keeping its lines.
                let w = cue_end_before(words, at)?;
                words[w].break_after = Some(Break::Line);
                return Ok("Merged cues".into());
            }
            for w in &mut words[from..to - 1] {
                if w.break_after != Some(Break::Line) {
                    w.break_after = Some(Break::Join);
                }
            }
            Ok("Merged cues".into())
        }
        "split" | "linebreak" => {
            let at = usize_field(op, "at")?;
            if at == 0 || at >= words.len() {
                return Err(WebError::BadRequest(
                    "There is no word boundary there.".into(),
                ));
            }
            let pinned_last = pinned(words);
            // The cue's own kind of break: the first half of a cue timed by hand is too.
            let kind_of_cue = words[at - 1..]
                .iter()
                .find_map(cue_break)
                .unwrap_or(Break::Cue);
            let w = &mut words[at - 1];
            match kind {
                "split" => {
                    w.break_after = Some(kind_of_cue);
                    Ok("Split a cue".into())
                }
                _ if cue_break(w).is_some() && pinned_last => Err(WebError::BadRequest(
                    "That word ends its cue: a line break goes inside a cue.".into(),
                )),
                _ => {
                    w.break_after = if w.break_after == Some(Break::Line) {
                        None
                    } else {
                        Some(Break::Line)
                    };
                    Ok("Line break".into())
                }
            }
        }
        "movelast" | "movefirst" => {
            // `at`: the first word of the next cue. The cue boundary moves one word back (the
            // cue's last word starts the next cue) or on (the next cue's first word ends this
            // one); the words keep their times, every other break stays.
            let at = usize_field(op, "at")?;
            if at == 0 || at >= words.len() || !pinned(words) {
                return Err(WebError::BadRequest(
                    "There is no cue boundary there.".into(),
                ));
            }
            let end = cue_end_before(words, at)?;
            let visible = |w: &Word| !w.text.trim().is_empty();
            if kind == "movelast" {
                let prev = (0..end)
                    .rev()
                    .take_while(|&k| cue_break(&words[k]).is_none())
                    .find(|&k| visible(&words[k]))
                    .ok_or_else(|| {
                        WebError::BadRequest(
                            "The cue has one word: merge it with the next instead.".into(),
                        )
                    })?;
                words[prev].break_after = words[end].break_after.take();
                Ok("Moved a word to the next cue".into())
            } else {
                let next = (end + 1..words.len())
                    .find(|&k| visible(&words[k]))
                    .filter(|&k| cue_break(&words[k]).is_none())
                    .ok_or_else(|| {
                        WebError::BadRequest("The next cue has one word: merge it instead.".into())
                    })?;
                if (end + 1..next).any(|k| cue_break(&words[k]).is_some()) {
                    return Err(WebError::BadRequest(
                        "There is no cue boundary there.".into(),
                    ));
                }
                words[next].break_after = words[end].break_after.take();
                Ok("Moved a word back from the next cue".into())
            }
        }
        "speaker" | "speakerturn" | "mergespeakers" => super::speakers::apply(words, op, kind),
        "replace" => {
            // A phrase (across words and cues), case-sensitive unless `caseSensitive` is false,
            // whole words only with `wholeWord` (`find`).
            let find = op.get("find").and_then(Value::as_str).unwrap_or("");
            let with = op.get("replace").and_then(Value::as_str).unwrap_or("");
            let flag = |k: &str, d: bool| op.get(k).and_then(Value::as_bool).unwrap_or(d);
            if find.len() > 1000 || with.len() > 1000 {
                return Err(WebError::BadRequest("The text to find is too long.".into()));
            }
            let q = super::find::Query::new(
                find,
                flag("caseSensitive", true),
                flag("wholeWord", false),
            )
            .ok_or_else(|| WebError::BadRequest("Type what to find.".into()))?;
            let n = super::find::replace(words, &q, with);
            if n == 0 {
                return Err(WebError::BadRequest(format!("“{find}” was not found.")));
            }
            Ok(format!(
                "Replaced “{find}” with “{with}” in {n} {}",
                if n == 1 { "place" } else { "places" }
            ))
        }
        _ => Err(WebError::BadRequest("Unknown operation.".into())),
    }
}

/// Whether `words` are pinned (`engine::pin`): their manual breaks are the whole segmentation
/// (timed by hand or not).
pub fn pinned(words: &[Word]) -> bool {
    matches!(
        words.last().and_then(|w| w.break_after),
        Some(Break::Cue | Break::Timed)
    )
}

/// A text edit that emptied the last cue leaves words still pinned.
fn keep_pinned(words: &mut [Word]) {
    if let Some(w) = words.last_mut().filter(|w| cue_break(w).is_none()) {
        w.break_after = Some(Break::Cue);
    }
}

/// The manual cue break after `w` (timed by hand or not), if it has one.
fn cue_break(w: &Word) -> Option<Break> {
    w.break_after
        .filter(|b| matches!(b, Break::Cue | Break::Timed))
}

/// The word whose manual cue break ends the cue before word `at` (pinned words): the last one
/// before `at` with a break, which must be a cue break.
fn cue_end_before(words: &[Word], at: usize) -> Result<usize, WebError> {
    (0..at.min(words.len()))
        .rev()
        .find(|&k| cue_break(&words[k]).is_some() || !words[k].text.trim().is_empty())
        .filter(|&k| cue_break(&words[k]).is_some())
        .ok_or_else(|| WebError::BadRequest("That is not the start of a cue.".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::test_words as words;
    use serde_json::json;

    #[test]
    fn splits_line_breaks_and_merges_are_manual_breaks_on_words() {
        let mut w = words();
        apply_op(&mut w, &json!({"op": "split", "at": 1})).expect("split");
        assert_eq!(w[0].break_after, Some(Break::Cue));
        apply_op(&mut w, &json!({"op": "merge", "at": 1})).expect("merge");
        assert_eq!(w[0].break_after, Some(Break::Join));
        apply_op(&mut w, &json!({"op": "merge", "at": 2})).expect("merge");
        assert_eq!(w[1].break_after, Some(Break::Join));
        assert!(apply_op(&mut w, &json!({"op": "merge", "at": 3})).is_err());
        apply_op(&mut w, &json!({"op": "linebreak", "at": 2})).expect("line");
        assert_eq!(w[1].break_after, Some(Break::Line));
        assert!(apply_op(&mut w, &json!({"op": "split", "at": 3})).is_err());
    }

    #[test]
    fn a_cue_timed_by_hand_stays_so_through_every_operation_on_it() {
        // Two imported cues, each timed by hand: "a b c" and "d e", then one timed by the rules.
        let mut w: Vec<Word> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .enumerate()
            .map(|(k, t)| Word::new(*t, Millis(k as i64 * 500), Millis(k as i64 * 500 + 400), 0))
            .collect();
        w[2].break_after = Some(Break::Timed);
        w[4].break_after = Some(Break::Timed);
        w[5].break_after = Some(Break::Cue);
        let kinds = |w: &[Word]| w.iter().map(|w| w.break_after).collect::<Vec<_>>();
        let (t, c) = (Some(Break::Timed), Some(Break::Cue));
        apply_op(&mut w, &json!({"op": "split", "at": 1})).expect("split");
        assert_eq!(kinds(&w), [t, None, t, None, t, c]);
        apply_op(&mut w, &json!({"op": "merge", "at": 1})).expect("merge");
        apply_op(&mut w, &json!({"op": "movelast", "at": 3})).expect("move last");
        assert_eq!(kinds(&w), [Some(Break::Line), t, None, None, t, c]);
        apply_op(&mut w, &json!({"op": "movefirst", "at": 2})).expect("move first");
        assert_eq!(kinds(&w), [Some(Break::Line), None, t, None, t, c]);
        // The rules' cue stays the rules' through the same operations.
        apply_op(&mut w, &json!({"op": "movelast", "at": 5})).expect("move last");
        assert_eq!(kinds(&w), [Some(Break::Line), None, t, t, None, c]);
        let note = apply_op(
            &mut w,
            &json!({"op": "text", "from": 3, "to": 4, "text": "dee dee"}),
        )
        .expect("text");
        assert_eq!(note, "Edited text");
        assert_eq!(kinds(&w), [Some(Break::Line), None, t, None, t, None, c]);
        apply_op(&mut w, &json!({"op": "split", "at": 6})).expect("split");
        assert_eq!(kinds(&w)[5..], [c, c]);
    }

    #[test]
    fn replace_all_keeps_timings_and_refuses_what_is_absent() {
        let mut w = words();
        let note = apply_op(
            &mut w,
            &json!({"op": "replace", "find": "o", "replace": "0"}),
        )
        .expect("replace");
        assert!(note.contains("2 places"), "{note}");
        assert_eq!(&*w[0].text, "0ne");
        assert_eq!((w[1].start, w[1].end), (Millis(500), Millis(900)));
        assert!(apply_op(
            &mut w,
            &json!({"op": "replace", "find": "zz", "replace": "y"})
        )
        .is_err());
    }
}

/// The promise of pinned words (issue 22, item 2): over random sequences of edits, every cue an
/// edit does not name stays exactly as it was (times, lines, words).
#[cfg(test)]
mod local_edits {
    use super::*;
    use cuecraft_engine::{layout, pin, Cue, FrameRate, Settings};
    use serde_json::json;

    use super::super::ranges::cue_ranges;

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    const VOCAB: [&str; 14] = [
        "the",
        "river",
        "moved",
        "quickly.",
        "and",
        "valley,",
        "nobody",
        "station",
        "I",
        "yes?",
        "thousand",
        "years.",
        "électricité",
        "a",
    ];

    fn transcript(rng: &mut Rng, n: usize) -> Vec<Word> {
        let mut t = 0i64;
        (0..n)
            .map(|_| {
                t += [20, 60, 150, 400, 900][rng.below(5)];
                let d = 120 + rng.below(400) as i64;
                let speaker = u32::from(rng.below(25) == 0);
                let w = Word::new(
                    VOCAB[rng.below(VOCAB.len())],
                    Millis(t),
                    Millis(t + d),
                    speaker,
                );
                t += d;
                w
            })
            .collect()
    }

    /// One random edit of cue `k` (and the next): the op, the cues it names, and whether the
    /// next cue may change its lines (a text edit that changes whether the cue ends a sentence,
    /// or who speaks its last word: the next cue's capital and `...` follow).
    fn random_op(rng: &mut Rng, cues: &[Cue], k: usize) -> (Value, usize) {
        let ranges = cue_ranges(cues);
        let (from, to) = ranges[k];
        let last = k + 1 == cues.len();
        match rng.below(7) {
            0 | 1 => {
                let mut t: Vec<String> = cues[k].words.iter().map(|w| w.text.to_string()).collect();
                let word = VOCAB[rng.below(VOCAB.len())].to_string();
                let at = rng.below(t.len() + 1);
                match rng.below(4) {
                    0 => t.insert(at, word),
                    1 if t.len() > 1 => {
                        t.remove(at.min(t.len() - 1));
                    }
                    2 => t.push(format!("{word} again.")),
                    _ => {
                        let last = t.len() - 1;
                        t[at.min(last)] = word;
                    }
                }
                (
                    json!({"op": "text", "from": from, "to": to, "text": t.join(" ")}),
                    1,
                )
            }
            2 if to - from >= 2 => (
                json!({"op": "split", "at": from + 1 + rng.below(to - from - 1)}),
                1,
            ),
            3 if to - from >= 2 => (
                json!({"op": "linebreak", "at": from + 1 + rng.below(to - from - 1)}),
                1,
            ),
            4 if !last => (
                json!({"op": "merge", "at": to, "from": from, "to": ranges[k + 1].1}),
                2,
            ),
            5 if !last => (json!({"op": "movelast", "at": to}), 2),
            6 if !last => (json!({"op": "movefirst", "at": to}), 2),
            _ => (json!({"op": "nothing"}), 0),
        }
    }

    /// What the next cue's first word takes its capital and `...` from: whether this cue ends a
    /// sentence, and who speaks its last word (a speaker change starts with a capital).
    fn ends_sentence(c: &Cue) -> (bool, Option<u32>) {
        let last = c.words.last();
        (
            last.is_some_and(|w| cuecraft_engine::punctuate::ends_sentence(&w.text)),
            last.map(|w| w.speaker),
        )
    }

    /// A cue's start, end, speaker, lines and words (text, start, end).
    type Shown = (
        Millis,
        Millis,
        u32,
        Vec<String>,
        Vec<(String, Millis, Millis)>,
    );

    /// What a cue shows, its number and the words' manual breaks aside.
    fn shown(c: &Cue) -> Shown {
        let words = c
            .words
            .iter()
            .map(|w| (w.text.to_string(), w.start, w.end))
            .collect();
        (c.start, c.end, c.speaker, c.lines.clone(), words)
    }

    #[test]
    fn an_edit_changes_only_the_cues_it_names() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut checked = 0;
        for case in 0..60 {
            let settings = Settings {
                max_chars_per_line: [32, 42][rng.below(2)],
                max_lines_per_subtitle: 1 + rng.below(2) as u32,
                ellipsis_continuation: rng.below(3) == 0,
                format_subtitles: case % 5 != 4,
                min_frames_between_subtitles: rng.below(4) as u32,
                max_duration: (rng.below(4) == 0).then_some(Millis(3000)),
                ..Settings::default()
            };
            let fr = FrameRate::FPS_25;
            let frame = fr.frames_duration(1);
            let n = 20 + rng.below(300);
            let mut words = pin(&transcript(&mut rng, n), &settings, fr);
            for step in 0..25 {
                let before = layout(&words, &settings, fr);
                if before.is_empty() {
                    break;
                }
                let k = rng.below(before.len());
                let (op, named) = random_op(&mut rng, &before, k);
                if named == 0 {
                    continue;
                }
                let mut edited = words.clone();
                if apply_op(&mut edited, &op).is_err() {
                    // Refused (a move out of a one-word cue): nothing changed.
                    continue;
                }
                assert!(pinned(&edited), "case {case} step {step}: {op}");
                let after = layout(&edited, &settings, fr);
                let ctx = || format!("case {case} step {step}: {op}");
                // Every cue before the edited ones is the same.
                // (The `...` ending the cue before follows its speaker: when an edit changes the
                // speaker the edited cue starts with, that cue's lines may change, nothing else.)
                let speaker_changed = after.get(k).map(|c| c.speaker) != Some(before[k].speaker);
                for j in 0..k {
                    if j + 1 == k && speaker_changed {
                        let (a, b) = (&after[j], &before[j]);
                        assert_eq!(
                            (a.start, a.end, &a.words),
                            (b.start, b.end, &b.words),
                            "{}",
                            ctx()
                        );
                        continue;
                    }
                    assert_eq!(
                        shown(&after[j]),
                        shown(&before[j]),
                        "{} cue {j} k {k}\n{:?}\n{:?}",
                        ctx(),
                        before.get(k).map(shown),
                        after.get(k).map(shown)
                    );
                }
                // Every cue after them is the same but for its number.
                let tail = before.len() - k - named;
                assert!(after.len() >= k + tail, "{}", ctx());
                for j in 0..tail {
                    let (a, b) = (&after[after.len() - 1 - j], &before[before.len() - 1 - j]);
                    let first_after = j + 1 == tail;
                    let k_new = after.len() - tail - 1;
                    let sentence_changed = op["op"] == "text"
                        && after.get(k_new).map(ends_sentence) != Some(ends_sentence(&before[k]));
                    // A cue lasts a frame at least and keeps the frame gap to the next unless
                    // it is a single frame long: an edited cue squeezed to one frame (a split
                    // at a word spoken just before the next cue, zero-length words typed in)
                    // moves the next cue on to after it and the gap, its end with it.
                    let prev = &after[after.len() - 2 - j];
                    let squeezed = a.start != b.start && prev.end - prev.start <= frame;
                    let a = &if squeezed {
                        assert!(
                            a.start > b.start
                                && a.start
                                    <= prev.end
                                        + Millis(
                                            frame.0
                                                * (1 + settings.min_frames_between_subtitles
                                                    as i64)
                                        ),
                            "{}",
                            ctx()
                        );
                        assert!(a.end >= b.end, "{}", ctx());
                        Cue {
                            start: b.start,
                            end: b.end,
                            ..a.clone()
                        }
                    } else {
                        a.clone()
                    };
                    if first_after && sentence_changed {
                        // Its capital and `...` may follow the new sentence end or last speaker
                        // (and with the `...` the reading time its end is held for); nothing
                        // else.
                        assert_eq!((a.start, &a.words), (b.start, &b.words), "{}", ctx());
                    } else {
                        assert_eq!(
                            shown(a),
                            shown(b),
                            "{} cue {} from the end, k {k} tail {tail}\nbefore {:?}\nafter {:?}",
                            ctx(),
                            j,
                            before
                                .get(k..k + named + 1)
                                .map(|c| c.iter().map(shown).collect::<Vec<_>>()),
                            after
                                .get(k..k + named + 1)
                                .map(|c| c.iter().map(shown).collect::<Vec<_>>())
                        );
                    }
                }
                match op["op"].as_str() {
                    Some("split") => assert_eq!(after.len(), before.len() + 1, "{}", ctx()),
                    Some("merge") => assert_eq!(after.len(), before.len() - 1, "{}", ctx()),
                    Some("linebreak" | "movelast" | "movefirst") => {
                        assert_eq!(after.len(), before.len(), "{}", ctx())
                    }
                    _ => {}
                }
                words = edited;
                checked += 1;
            }
        }
        assert!(checked > 800, "{checked} edits checked");
    }
}
