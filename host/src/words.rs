//! The stored form of a transcript's words (the source of truth cues are derived from), and the
//! one conversion between engine milliseconds and the API's JSON seconds.

use cuecraft_engine::{Break, Millis, Word};
use serde_json::{json, Value};

/// Milliseconds as the API's seconds: a JSON number (`1.5`).
pub fn seconds(t: Millis) -> Value {
    json!(t.0 as f64 / 1000.0)
}

/// Encodes words for storage: `[{"t":text,"s":ms,"e":ms,"p":speaker,"b":"line"|"cue"}]`.
pub fn encode(words: &[Word]) -> String {
    let list: Vec<Value> = words
        .iter()
        .map(|w| {
            let mut v = json!({"t": &*w.text, "s": w.start.0, "e": w.end.0, "p": w.speaker});
            if let Some(b) = w.break_after {
                v["b"] = json!(match b {
                    Break::Line => "line",
                    Break::Cue => "cue",
                });
            }
            v
        })
        .collect();
    Value::Array(list).to_string()
}

/// Decodes stored words; `None` when the stored text is not what [`encode`] writes.
pub fn decode(stored: &str) -> Option<Vec<Word>> {
    let value: Value = serde_json::from_str(stored).ok()?;
    value
        .as_array()?
        .iter()
        .map(|w| {
            let mut word = Word::new(
                w.get("t")?.as_str()?,
                Millis(w.get("s")?.as_i64()?),
                Millis(w.get("e")?.as_i64()?),
                u32::try_from(w.get("p")?.as_u64()?).ok()?,
            );
            word.break_after = match w.get("b").and_then(Value::as_str) {
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
