//! Checks the shared fixtures themselves, so a typo there cannot silently weaken every format test.

mod common;

use std::collections::HashSet;

#[test]
fn fixture_names_are_unique_and_snapshot_safe() {
    let mut seen = HashSet::new();
    for f in common::fixtures() {
        assert!(seen.insert(f.name), "duplicate fixture {}", f.name);
        assert!(f
            .name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
    }
}

#[test]
fn expected_cues_apply_offset_clamp_rounding_and_clean_up() {
    let all = common::fixtures();
    let get = |n: &str| all.iter().find(|f| f.name == n).unwrap();

    let neg = get("negative_offset").expected(1);
    assert_eq!(
        neg.iter().map(|e| (e.start, e.end)).collect::<Vec<_>>(),
        vec![(0, 1), (0, 2_000), (3_000, 4_500)]
    );

    let edges = get("rounding_edges").expected(10);
    assert_eq!(
        edges.iter().map(|e| (e.start, e.end)).collect::<Vec<_>>(),
        vec![
            (0, 10),
            (1_000, 1_010),
            (1_010, 3_000),
            (60_000, 60_010),
            (61_000, 61_010),
            (62_000, 62_010)
        ]
    );

    let untidy = get("untidy_lines").expected(1);
    assert_eq!(untidy.len(), 4, "cues without visible text are dropped");
    assert_eq!(
        untidy[0].lines,
        vec!["First by time,", "blank lines dropped."]
    );
    assert_eq!(
        untidy[1].lines,
        vec!["Embedded", "newline and", "CRLF", "and CR."]
    );
    assert_eq!(untidy[2].lines, vec!["Second by time."]);
}
