//! The stored form of a transcript's words (the source of truth cues are derived from), and the
//! one conversion between engine milliseconds and the API's JSON seconds.

use cuecraft_engine::{Break, Millis, Word};
use serde_json::{json, Value};

/// Milliseconds as the API's seconds: a JSON number (`1.5`).
pub fn seconds(t: Millis) -> Value {
    json!(t.0 as f64 / 1000.0)
}

/// A stored word as read: borrowed text where the JSON has no escapes.
#[derive(serde::Deserialize)]
struct StoredIn<'a> {
    #[serde(borrow)]
    t: std::borrow::Cow<'a, str>,
    s: i64,
    e: i64,
    p: u64,
    #[serde(default, borrow)]
    b: Option<std::borrow::Cow<'a, str>>,
}

/// A stored word as written.
#[derive(serde::Serialize)]
struct StoredOut<'a> {
    t: &'a str,
    s: i64,
    e: i64,
    p: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<&'static str>,
}

/// Encodes words for storage: `[{"t":text,"s":ms,"e":ms,"p":speaker,"b":"line"|"cue"}]`.
/// Serialized straight from the words (no JSON tree): a 10-hour transcript is 100,000 of them.
pub fn encode(words: &[Word]) -> String {
    let list: Vec<StoredOut<'_>> = words
        .iter()
        .map(|w| StoredOut {
            t: &w.text,
            s: w.start.0,
            e: w.end.0,
            p: w.speaker,
            b: w.break_after.map(|b| match b {
                Break::Line => "line",
                Break::Cue => "cue",
                Break::Join => "join",
            }),
        })
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".to_string())
}

/// [`encode`]'s text with the byte offset where each word's object starts, so that an edit of a
/// few words can write the new stored text by splicing ([`splice_encoded`]) instead of encoding
/// 100,000 words again.
pub fn encode_indexed(words: &[Word]) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(words.len() * 48 + 2);
    let mut offsets = Vec::with_capacity(words.len());
    out.push('[');
    for (k, w) in words.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        offsets.push(out.len());
        push_word(&mut out, w);
    }
    out.push(']');
    (out, offsets)
}

fn push_word(out: &mut String, w: &Word) {
    let item = StoredOut {
        t: &w.text,
        s: w.start.0,
        e: w.end.0,
        p: w.speaker,
        b: w.break_after.map(|b| match b {
            Break::Line => "line",
            Break::Cue => "cue",
            Break::Join => "join",
        }),
    };
    // Serializing a struct of strings and integers cannot fail.
    if let Ok(s) = serde_json::to_string(&item) {
        out.push_str(&s);
    }
}

/// The stored text and offsets of `encoded`/`offsets` (from [`encode_indexed`]) after the words
/// `from..from + remove` were replaced by `insert`: equal to [`encode_indexed`] of the new words,
/// in time proportional to the text's length (one copy) rather than to encoding every word.
/// `None` when the range is outside the words.
pub fn splice_encoded(
    encoded: &str,
    offsets: &[usize],
    from: usize,
    remove: usize,
    insert: &[Word],
) -> Option<(String, Vec<usize>)> {
    let n = offsets.len();
    let to = from.checked_add(remove).filter(|&t| t <= n)?;
    let close = encoded.len().checked_sub(1)?;
    // Word k's object ends where the next one's separator is (or at the closing bracket).
    let end_of = |k: usize| if k + 1 < n { offsets[k + 1] - 1 } else { close };
    // `[` and the words before `from`, without a trailing separator.
    let head = &encoded[..if from > 0 { end_of(from - 1) } else { 1 }];
    let mut out = String::with_capacity(encoded.len() + insert.len() * 48);
    out.push_str(head);
    let mut offs = Vec::with_capacity(n - remove + insert.len());
    offs.extend_from_slice(&offsets[..from]);
    let mut first = from == 0;
    for w in insert {
        if !first {
            out.push(',');
        }
        first = false;
        offs.push(out.len());
        push_word(&mut out, w);
    }
    if to < n {
        if !first {
            out.push(',');
        }
        let shift = out.len() as isize - offsets[to] as isize;
        offs.extend(offsets[to..].iter().map(|&o| (o as isize + shift) as usize));
        out.push_str(&encoded[offsets[to]..]);
    } else {
        out.push(']');
    }
    Some((out, offs))
}

/// Decodes stored words; `None` when the stored text is not what [`encode`] writes.
pub fn decode(stored: &str) -> Option<Vec<Word>> {
    let list: Vec<StoredIn<'_>> = serde_json::from_str(stored).ok()?;
    list.into_iter()
        .map(|w| {
            let mut word = Word::new(&*w.t, Millis(w.s), Millis(w.e), u32::try_from(w.p).ok()?);
            word.break_after = match w.b.as_deref() {
                Some("line") => Some(Break::Line),
                Some("cue") => Some(Break::Cue),
                Some("join") => Some(Break::Join),
                _ => None,
            };
            Some(word)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_through_storage() {
        let mut words = vec![
            Word::new("Hello,", Millis(0), Millis(420), 0),
            Word::new("wörld \"x\"", Millis(500), Millis(900), 3),
        ];
        words[0].break_after = Some(Break::Line);
        assert_eq!(decode(&encode(&words)), Some(words));
        assert_eq!(decode("{}"), None);
    }

    fn word(k: u64) -> Word {
        let mut w = Word::new(
            format!("w{k}\"é"),
            Millis(k as i64 * 10),
            Millis(k as i64 * 10 + 5),
            (k % 3) as u32,
        );
        if k.is_multiple_of(4) {
            w.break_after = Some(if k.is_multiple_of(8) {
                Break::Cue
            } else {
                Break::Line
            });
        }
        w
    }

    proptest::proptest! {
        /// Splicing the stored text gives exactly what encoding the new words gives, and offsets
        /// that stay usable for the next splice.
        #[test]
        fn a_spliced_encoding_is_the_encoding_of_the_spliced_words(
            n in 0usize..12,
            edits in proptest::collection::vec((0usize..14, 0usize..5, 0usize..4), 1..4),
        ) {
            let mut words: Vec<Word> = (0..n as u64).map(word).collect();
            let (mut text, mut offsets) = encode_indexed(&words);
            proptest::prop_assert_eq!(&text, &encode(&words));
            let mut next = 100;
            for (from, remove, insert) in edits {
                let from = from.min(words.len());
                let remove = remove.min(words.len() - from);
                let new: Vec<Word> = (next..next + insert as u64).map(word).collect();
                next += 10;
                let (t, o) = splice_encoded(&text, &offsets, from, remove, &new).expect("in range");
                words.splice(from..from + remove, new);
                let (want_t, want_o) = encode_indexed(&words);
                proptest::prop_assert_eq!(&t, &want_t);
                proptest::prop_assert_eq!(&o, &want_o);
                proptest::prop_assert_eq!(decode(&t), Some(words.clone()));
                text = t;
                offsets = o;
            }
            proptest::prop_assert!(splice_encoded(&text, &offsets, words.len(), 1, &[]).is_none());
        }
    }

    #[test]
    fn milliseconds_become_json_seconds() {
        assert_eq!(seconds(Millis(1500)).to_string(), "1.5");
        assert_eq!(seconds(Millis(100)).to_string(), "0.1");
        assert_eq!(seconds(Millis(0)).to_string(), "0.0");
    }
}
