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
            }),
        })
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".to_string())
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

    #[test]
    fn milliseconds_become_json_seconds() {
        assert_eq!(seconds(Millis(1500)).to_string(), "1.5");
        assert_eq!(seconds(Millis(100)).to_string(), "0.1");
        assert_eq!(seconds(Millis(0)).to_string(), "0.0");
    }
}
