//! Fuzz target `job_request`: arbitrary bytes into the POST /jobs body validation. Whatever comes
//! in, the answer is a valid request or one of the 400/501 errors, never a panic, and a valid
//! request obeys every rule the contract states, and no accepted body holds an object with a
//! repeated member name (I-JSON), checked here by an independent reading that keeps every member.
#![no_main]

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use cuecraft_host::api::jobs::validate_create_request;
use cuecraft_host::ApiError;
use libfuzzer_sys::fuzz_target;

/// A JSON value read with every object member kept, repeats included.
enum Tree {
    Object(Vec<(String, Tree)>),
    Array(Vec<Tree>),
    Scalar,
}

impl Tree {
    fn has_repeated_name(&self) -> bool {
        match self {
            Tree::Object(members) => {
                let mut names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
                names.sort_unstable();
                names.windows(2).any(|w| w[0] == w[1])
                    || members.iter().any(|(_, v)| v.has_repeated_name())
            }
            Tree::Array(items) => items.iter().any(Tree::has_repeated_name),
            Tree::Scalar => false,
        }
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tree, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tree;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_str<E>(self, _: &str) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_unit<E>(self) -> Result<Tree, E> {
                Ok(Tree::Scalar)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Tree::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Tree::Object(members))
            }
        }
        d.deserialize_any(V)
    }
}

fuzz_target!(|data: &[u8]| {
    match validate_create_request(data) {
        Ok(req) => {
            let tree: Tree = serde_json::from_slice(data).expect("an accepted body is JSON");
            assert!(!tree.has_repeated_name(), "accepted a repeated member name");
            assert!((1..=5_368_709_120).contains(&req.size_bytes));
            assert!(req.duration_seconds.is_finite() && req.duration_seconds > 0.0);
            assert!(req.filename.chars().count() <= 255);
            assert!(!req.name.is_empty());
            assert!(
                req.content_type.starts_with("audio/")
                    || req.content_type.starts_with("video/")
                    || req.content_type.to_ascii_lowercase().starts_with("audio/")
                    || req.content_type.to_ascii_lowercase().starts_with("video/")
            );
            assert!(req.settings.check_combined("settings").is_empty());
        }
        Err(ApiError::InvalidRequest(fields)) => assert!(!fields.is_empty()),
        Err(e) => assert!(matches!(
            e.code(),
            "invalid_json" | "source_url_not_supported"
        )),
    }
});
