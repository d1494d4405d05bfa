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
    #[serde(default)]
    h: bool,
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
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    h: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<&'static str>,
}

/// Encodes words for storage: `[{"t":text,"s":ms,"e":ms,"p":speaker,"h":true,"b":"line"|"cue"|"join"|"timed"}]`
/// (`h` only on a speaker a person set, `Word::speaker_set`).
/// Serialized straight from the words (no JSON tree): a 10-hour transcript is 100,000 of them.
pub fn encode(words: &[Word]) -> String {
    let list: Vec<StoredOut<'_>> = words
        .iter()
        .map(|w| StoredOut {
            t: &w.text,
            s: w.start.0,
            e: w.end.0,
            p: w.speaker,
            h: w.speaker_set,
            b: w.break_after.map(|b| match b {
                Break::Line => "line",
                Break::Cue => "cue",
                Break::Join => "join",
                Break::Timed => "timed",
            }),
        })
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".to_string())
}

/// Each word's object in a stored list (the text [`encode`] writes), as slices of it, in order;
/// `None` when the text is not a JSON list. The list is cut at its top-level commas and nothing
/// is dropped, so joining the slices with `,` inside `[` `]` gives the text back byte for byte:
/// what lets the store keep a transcript's words in pages and splice them (`store::pages`). It
/// cuts, it does not validate: [`decode`] does.
pub fn split_encoded(stored: &str) -> Option<Vec<&str>> {
    split_objects(stored.strip_prefix('[')?.strip_suffix(']')?)
}

/// The elements of a list's inside (`{..},{..}`, no brackets; empty for none), as slices of it;
/// `None` when an element is empty or blank, or a string or bracket is left open.
pub fn split_objects(inner: &str) -> Option<Vec<&str>> {
    if inner.is_empty() {
        return Some(Vec::new());
    }
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 40 + 1);
    let (mut start, mut depth, mut in_string) = (0usize, 0usize, false);
    let mut i = 0;
    fn element<'a>(part: &'a str, out: &mut Vec<&'a str>) -> Option<()> {
        (!part.trim().is_empty()).then(|| out.push(part))
    }
    while i < b.len() {
        let c = b[i];
        i += 1;
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                element(&inner[start..i - 1], &mut out)?;
                start = i;
            }
            _ => {}
        }
    }
    if in_string || depth != 0 || i > b.len() {
        return None;
    }
    element(&inner[start..], &mut out)?;
    Some(out)
}

/// Decodes stored words; `None` when the stored text is not what [`encode`] writes.
pub fn decode(stored: &str) -> Option<Vec<Word>> {
    let list: Vec<StoredIn<'_>> = serde_json::from_str(stored).ok()?;
    list.into_iter()
        .map(|w| {
            let mut word = Word::new(&*w.t, Millis(w.s), Millis(w.e), u32::try_from(w.p).ok()?);
            word.speaker_set = w.h;
            word.break_after = match w.b.as_deref() {
                Some("line") => Some(Break::Line),
                Some("cue") => Some(Break::Cue),
                Some("join") => Some(Break::Join),
                Some("timed") => Some(Break::Timed),
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
        words[1].speaker_set = true;
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

    #[test]
    fn a_stored_list_splits_into_its_words_objects() {
        let mut words: Vec<Word> = (0..9).map(word).collect();
        words[2].text = "a}b{c]\\\"[,".into();
        words[3].text = "\\".into();
        let text = encode(&words);
        let parts = split_encoded(&text).expect("splits");
        assert_eq!(parts.len(), words.len());
        for (part, w) in parts.iter().zip(&words) {
            assert_eq!(
                *part,
                encode(std::slice::from_ref(w)).trim_matches(['[', ']'])
            );
        }
        assert_eq!(format!("[{}]", parts.join(",")), text);
        assert_eq!(split_encoded("[]"), Some(vec![]));
        assert_eq!(split_encoded("[ {} , 1]"), Some(vec![" {} ", " 1"]));
        for bad in [
            "",
            "[",
            "{}",
            "[{},]",
            "[,{}]",
            "[ ]",
            "[{\"t\":\"x}]",
            "[{}}]",
        ] {
            assert_eq!(split_encoded(bad), None, "{bad}");
        }
    }

    #[test]
    fn milliseconds_become_json_seconds() {
        assert_eq!(seconds(Millis(1500)).to_string(), "1.5");
        assert_eq!(seconds(Millis(100)).to_string(), "0.1");
        assert_eq!(seconds(Millis(0)).to_string(), "0.0");
    }
}
