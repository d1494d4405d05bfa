//! Strict JSON as I-JSON (RFC 7493) asks: an object whose member names repeat is refused, at any
//! depth, instead of silently keeping the last value (which would let `{"maxCharsPerLine": 300,
//! "maxCharsPerLine": 10}` pass a check the first value fails). The API's request bodies and every
//! JSON file or argument the CLI reads go through here.
//!
//! [`duplicate_keys`] walks the text once without building it (serde_json's own parser and its
//! nesting limit), so typed parsing afterwards is unchanged; names are compared after unescaping,
//! so `"a"` and `"\u0061"` are the same name.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Where a value sits in the document, built only when a duplicate is reported.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    /// `settings.forbiddenCharacters[3].chars`: the contract's field paths.
    fn render(&self, out: &mut String) {
        match self {
            At::Root => {}
            At::Key(parent, key) => {
                parent.render(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            At::Index(parent, i) => {
                parent.render(out);
                out.push_str(&format!("[{i}]"));
            }
        }
    }
}

struct Walk<'a, 'p> {
    at: At<'p>,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                at: At::Index(&self.at, i),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut names: Vec<String> = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if names.contains(&name) {
                let mut path = String::new();
                At::Key(&self.at, &name).render(&mut path);
                self.found.borrow_mut().push(path);
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            map.next_value_seed(Walk {
                at: At::Key(&self.at, &name),
                found: self.found,
            })?;
            names.push(name);
        }
        Ok(())
    }
}

/// The paths of every repeated member name in `bytes` (`settings.maxCharsPerLine`, in document
/// order; empty when there is none), or the syntax error that makes `bytes` not JSON.
pub fn duplicate_keys(bytes: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Walk {
        at: At::Root,
        found: &found,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(found.into_inner())
}

/// Why a document was refused.
#[derive(Debug)]
pub enum StrictError {
    /// Not JSON.
    Syntax(serde_json::Error),
    /// JSON, with these member names repeated (paths as [`duplicate_keys`] gives them).
    Duplicates(Vec<String>),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictError::Syntax(e) => write!(f, "{e}"),
            StrictError::Duplicates(paths) => {
                write!(f, "duplicate key {}", paths.join(", "))
            }
        }
    }
}

impl std::error::Error for StrictError {}

/// Checks `bytes` for duplicate names, then parses it as `T`.
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StrictError> {
    let dups = duplicate_keys(bytes).map_err(StrictError::Syntax)?;
    if !dups.is_empty() {
        return Err(StrictError::Duplicates(dups));
    }
    serde_json::from_slice(bytes).map_err(StrictError::Syntax)
}

/// [`from_slice`] into a `Value`.
pub fn value(bytes: &[u8]) -> Result<Value, StrictError> {
    from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_names_are_found_at_any_depth_with_their_paths() {
        let text = br#"{"settings": {"maxCharsPerLine": 300, "maxCharsPerLine": 10},
            "a": [{"b": 1}, {"c": {"d": 1, "e": 2, "d": 3}}], "a2": 1, "a2": {"x": 1, "x": 2}}"#;
        assert_eq!(
            duplicate_keys(text).unwrap(),
            ["settings.maxCharsPerLine", "a[1].c.d", "a2"]
        );
    }

    #[test]
    fn names_compare_after_unescaping() {
        assert_eq!(duplicate_keys(br#"{"a": 1, "\u0061": 2}"#).unwrap(), ["a"]);
        assert!(duplicate_keys(br#"{"a": 1, "A": 2, "b": {"a": 1}}"#)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn json_without_repeats_parses_as_before_and_syntax_errors_stay_syntax_errors() {
        let v = value(br#"{"a": [1, {"b": null}], "c": "d"}"#).unwrap();
        assert_eq!(v, serde_json::json!({"a": [1, {"b": null}], "c": "d"}));
        assert!(matches!(value(b"{\"a\": 1,}"), Err(StrictError::Syntax(_))));
        assert!(matches!(value(b"{} {}"), Err(StrictError::Syntax(_))));
        assert!(matches!(
            value(br#"{"a":1,"a":1}"#),
            Err(StrictError::Duplicates(d)) if d == ["a"]
        ));
        // The nesting limit still holds: a deep document is an error, not a stack overflow.
        let deep = "[".repeat(100_000);
        assert!(matches!(
            value(deep.as_bytes()),
            Err(StrictError::Syntax(_))
        ));
    }
}
