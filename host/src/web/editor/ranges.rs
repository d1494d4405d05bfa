//! The stored words each laid-out cue shows, as index ranges: a leaf both `edit` (a merge the
//! layout keeps) and `ops`' property test read, so neither imports the other for it.

/// The stored words of each cue, by index: cue `i` shows words `[r.0, r.1)`.
pub(super) fn cue_ranges(cues: &[cuecraft_engine::Cue]) -> Vec<(usize, usize)> {
    let mut from = 0;
    cues.iter()
        .map(|c| {
            from += c.words.len();
            (from - c.words.len(), from)
        })
        .collect()
}
