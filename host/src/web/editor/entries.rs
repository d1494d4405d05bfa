//! The revision history's entries: the first revision's words whole, each later one the splice it
//! made (`{"from","remove","insert"}`, written by `save`), settings and lead-in changes with their
//! before and after; replayed to any revision, and the settings and lead-in in force at one.

use cuecraft_engine::Word;
use serde_json::Value;

use crate::words::decode;
#[cfg(test)]
use crate::words::encode;

/// Where `new` differs from `old`: `(from, remove, insert)`, the words between their common
/// start and common end (`old[from..from + remove]` became `new[from..from + insert]`).
pub fn splice_range(old: &[Word], new: &[Word]) -> (usize, usize, usize) {
    let mut from = 0;
    while from < old.len() && from < new.len() && old[from] == new[from] {
        from += 1;
    }
    let mut tail = 0;
    while tail < old.len() - from
        && tail < new.len() - from
        && old[old.len() - 1 - tail] == new[new.len() - 1 - tail]
    {
        tail += 1;
    }
    (from, old.len() - tail - from, new.len() - tail - from)
}

/// A history entry: `{"from":i,"remove":n,"insert":[stored words]}`, so an entry of a 10-hour
/// transcript is the size of the edit, not 5 MB.
pub(super) fn splice_json(from: usize, remove: usize, insert: &str) -> String {
    format!("{{\"from\":{from},\"remove\":{remove},\"insert\":{insert}}}")
}

/// The change from `old` to `new` as one splice, for the revision history.
#[cfg(test)]
pub fn splice_diff(old: &[Word], new: &[Word]) -> String {
    let (from, remove, insert) = splice_range(old, new);
    splice_json(from, remove, &encode(&new[from..from + insert]))
}

/// The job's settings in force after the first `n` history entries of `entries` (all of a
/// transcript's), when a settings change is among them: the last change's settings up to there,
/// else the settings before the first change after; `None` when the history holds none.
pub fn settings_at(entries: &[String], n: usize) -> Option<Value> {
    let parsed = |e: &String| -> Option<Value> {
        if !e.starts_with('{') || !e.contains("\"settings\"") {
            return None;
        }
        serde_json::from_str::<Value>(e)
            .ok()
            .filter(|v| v.get("settings").is_some())
    };
    if let Some(v) = entries[..n.min(entries.len())]
        .iter()
        .rev()
        .find_map(parsed)
    {
        return v.get("settings").cloned();
    }
    entries
        .get(n..)?
        .iter()
        .find_map(parsed)
        .and_then(|v| v.get("before").cloned())
}

/// The lead-in in force at the revision whose history is `entries[..n]`: the last change of it
/// up to there, else the value before the first change after; `None` when the history never
/// changed it.
pub fn lead_in_at(entries: &[String], n: usize) -> Option<u32> {
    let parsed = |e: &String| -> Option<Value> {
        if !e.starts_with('{') || !e.contains("\"leadIn\"") {
            return None;
        }
        serde_json::from_str::<Value>(e)
            .ok()
            .filter(|v| v.get("leadIn").is_some())
    };
    let frames = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .and_then(|f| u32::try_from(f).ok())
    };
    if let Some(v) = entries[..n.min(entries.len())]
        .iter()
        .rev()
        .find_map(parsed)
    {
        return frames(v.get("leadIn"));
    }
    entries
        .get(n..)?
        .iter()
        .find_map(parsed)
        .and_then(|v| frames(v.get("leadInBefore")))
}

/// The words of a revision from its history entries: the first whole, each later one a splice.
pub fn replay(entries: &[String]) -> Option<Vec<Word>> {
    let (first, rest) = entries.split_first()?;
    let mut words = decode(first)?;
    for entry in rest {
        if entry.starts_with('[') {
            // A whole word list (how the first version of the history stored every revision).
            words = decode(entry)?;
            continue;
        }
        let v: Value = serde_json::from_str(entry).ok()?;
        let from = usize::try_from(v.get("from")?.as_u64()?).ok()?;
        let remove = usize::try_from(v.get("remove")?.as_u64()?).ok()?;
        let insert = decode(&v.get("insert")?.to_string())?;
        if from.checked_add(remove)? > words.len() {
            return None;
        }
        words.splice(from..from + remove, insert);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::ops::apply_op;
    use crate::web::editor::test_words as words;
    use cuecraft_engine::Millis;
    use serde_json::json;

    #[test]
    fn the_lead_in_at_a_revision_is_the_last_change_before_or_the_one_the_next_change_replaced() {
        let settings = |extra: &str| {
            format!(
                "{{\"from\":0,\"remove\":0,\"insert\":[],\"settings\":{{}},\"before\":{{}}{extra}}}"
            )
        };
        let entries = vec![
            encode(&words()),
            splice_json(0, 1, "[]"),
            settings(""),
            settings(",\"leadIn\":3,\"leadInBefore\":0"),
            splice_json(0, 0, "[]"),
            settings(",\"leadIn\":5,\"leadInBefore\":3"),
        ];
        // Revisions 0-2 (entries[..1] to entries[..3]): before the first change, its `before`.
        assert_eq!(lead_in_at(&entries, 1), Some(0));
        assert_eq!(lead_in_at(&entries, 3), Some(0));
        assert_eq!(lead_in_at(&entries, 4), Some(3));
        assert_eq!(lead_in_at(&entries, 5), Some(3));
        assert_eq!(lead_in_at(&entries, 6), Some(5));
        // A history that never changed it: none, so a restore leaves the job's alone.
        assert_eq!(lead_in_at(&entries[..3], 1), None);
        assert_eq!(lead_in_at(&entries[..3], 3), None);
    }

    #[test]
    fn history_splices_replay_to_every_revision() {
        let base = words();
        let mut edited = base.clone();
        apply_op(
            &mut edited,
            &json!({"op": "text", "from": 1, "to": 2, "text": "2 and a half"}),
        )
        .expect("text");
        let mut split = edited.clone();
        apply_op(&mut split, &json!({"op": "split", "at": 2})).expect("split");
        let entries = vec![
            encode(&base),
            splice_diff(&base, &edited),
            splice_diff(&edited, &split),
            splice_diff(&split, &base),
            splice_diff(&base, &base),
        ];
        assert_eq!(replay(&entries[..1]), Some(base.clone()));
        assert_eq!(replay(&entries[..2]), Some(edited.clone()));
        assert_eq!(replay(&entries[..3]), Some(split.clone()));
        assert_eq!(replay(&entries[..4]), Some(base.clone()));
        assert_eq!(replay(&entries), Some(base.clone()));
        assert_eq!(
            splice_diff(&base, &base),
            "{\"from\":3,\"remove\":0,\"insert\":[]}"
        );
        // One word changed in 300: the entry holds that word, not the list.
        let long: Vec<Word> = (0..300)
            .map(|i| Word::new(format!("w{i}"), Millis(i * 100), Millis(i * 100 + 80), 0))
            .collect();
        let mut one = long.clone();
        one[150].text = "changed".into();
        let diff = splice_diff(&long, &one);
        assert_eq!(
            diff,
            format!(
                "{{\"from\":150,\"remove\":1,\"insert\":{}}}",
                encode(&one[150..151])
            )
        );
        assert_eq!(replay(&[encode(&long), diff]), Some(one));
        assert_eq!(
            replay(&[
                "[]".to_string(),
                "{\"from\":5,\"remove\":1,\"insert\":[]}".to_string()
            ]),
            None
        );
    }
}
