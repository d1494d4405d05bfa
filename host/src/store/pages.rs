//! A transcript's words in pages: the rows both backends keep them in, so that an edit rewrites
//! the few pages it touches instead of the whole list (4.4 MB for ten hours). The backends run
//! the SQL; what to read and write is decided here, once for both.
//!
//! A page is a row `(transcript, key, count, text)`. Its text is its words' objects as
//! [`crate::words::encode`] writes them, joined by `,`, without the list's brackets; the stored
//! list is `[`, the pages' texts in key order joined by `,`, `]`: byte for byte the text `encode`
//! writes for all the words, which is what every reader gets. A page holds 1 to `2 * target`
//! words ([`Geometry`]). A list written whole (recognition, the clean version, a translation) is
//! cut into pages of about `target` words with keys `0, spacing, 2 * spacing, ...`.
//!
//! A splice (`from`, `remove`, the inserted words) rewrites the pages from the one holding word
//! `from` to the one holding the last removed word: the pages between are deleted unread, the
//! first and the last are read for the words they keep. When what is left is under a quarter of
//! `target`, a neighbour page that has room is merged in; when it is over `2 * target`, it is
//! cut into pages of about `target`. New pages take keys between the first rewritten page's key
//! and the next page's, so nothing after them is renumbered; only when that gap has no integer
//! left (after some 32 splits at one place with the default spacing) are the transcript's keys
//! renumbered, by key only, without reading any text.

use std::fmt;

use crate::words::{split_encoded, split_objects};

/// The migration of words timed by hand (the SQLite store's 12, the Postgres store's 9), the
/// same SQL for both. Before it, `"b":"timed"` was only ever on a transcript's last word and meant
/// that every cue of the transcript was timed by hand (an imported file); since, it marks each
/// cue timed by hand on its own last word (`cuecraft_engine::Break::Timed`). Such transcripts' cue
/// breaks become `"timed"` in their pages, and in the history entries written while they were
/// timed by hand (revision 0 ends with the mark, up to the first "Laid cues out again", which
/// ended it), so the words and the revisions before that read back as they did. A `"b"` key is
/// always its object's last, and a `"` inside a JSON string is escaped, so the text matches
/// break keys only.
pub const TIMED_PER_CUE: &str = r#"
    UPDATE word_pages SET words = replace(words, '"b":"cue"}', '"b":"timed"}')
    WHERE transcript_id IN (
        SELECT p.transcript_id FROM word_pages p
        WHERE p.words LIKE '%"b":"timed"}'
          AND p.page = (SELECT MAX(q.page) FROM word_pages q WHERE q.transcript_id = p.transcript_id));
    UPDATE revisions SET words = replace(words, '"b":"cue"}', '"b":"timed"}')
    WHERE transcript_id IN (
        SELECT r.transcript_id FROM revisions r
        WHERE r.revision = 0 AND r.words LIKE '%"b":"timed"}]')
      AND revision < COALESCE(
        (SELECT MIN(l.revision) FROM revisions l
         WHERE l.transcript_id = revisions.transcript_id AND l.note = 'Laid cues out again'),
        9223372036854775807);"#;

/// The size of pages and the spacing of their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Words per page when a list is cut.
    pub target: usize,
    /// The distance between the keys of pages written whole.
    pub spacing: i64,
}

impl Geometry {
    /// About 45 KB of text per page: a 10-hour transcript is 100 pages.
    pub const DEFAULT: Geometry = Geometry {
        target: 1000,
        spacing: 1 << 32,
    };

    /// The most words a page holds.
    pub fn max(&self) -> usize {
        2 * self.target.max(1)
    }

    /// Under this many words a rewritten page is merged with a neighbour that has room.
    fn min(&self) -> usize {
        (self.target / 4).max(1)
    }

    fn spacing(&self) -> i64 {
        self.spacing.max(1)
    }
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry::DEFAULT
    }
}

/// A page to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub key: i64,
    /// How many words it holds.
    pub count: i64,
    /// Their objects joined by `,`.
    pub text: String,
}

/// A stored page without its text: its key and word count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub key: i64,
    pub count: i64,
}

/// Why a splice cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpliceError {
    /// The words `from..from + remove` are not all among the transcript's `words`.
    OutOfRange {
        from: usize,
        remove: usize,
        words: usize,
    },
    /// The inserted text is not a list `crate::words::encode` writes.
    Insert,
    /// A stored page's text is not its count of words, or the keys have no room left.
    Page(i64),
}

impl fmt::Display for SpliceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpliceError::OutOfRange {
                from,
                remove,
                words,
            } => write!(
                f,
                "a splice of words {from}..{} on a transcript of {words} words",
                from + remove
            ),
            SpliceError::Insert => write!(f, "the inserted words are not an encoded word list"),
            SpliceError::Page(key) => write!(f, "word page {key} is damaged or has no room"),
        }
    }
}

/// `words` cut into pages of about `target` words (each at most `max`): (count, text).
fn cut(words: &[&str], g: Geometry) -> Vec<(usize, String)> {
    let n = words.len();
    let k = if n == 0 {
        0
    } else if n <= g.max() {
        1
    } else {
        n / g.target.max(1)
    };
    (0..k)
        .map(|i| {
            let part = &words[n * i / k..n * (i + 1) / k];
            (part.len(), part.join(","))
        })
        .collect()
}

/// The pages of a list written whole, keys `0, spacing, ...`; `None` when `stored` is not a list
/// `crate::words::encode` writes.
pub fn paginate(stored: &str, g: Geometry) -> Option<Vec<Page>> {
    let words = split_encoded(stored)?;
    let mut pages = Vec::new();
    let mut key = 0i64;
    for (count, text) in cut(&words, g) {
        pages.push(Page {
            key,
            count: count as i64,
            text,
        });
        key = key.checked_add(g.spacing())?;
    }
    Some(pages)
}

/// Adds a page's text to a stored list being assembled (`[` so far, then the pages' texts in key
/// order; the caller closes it with `]`).
pub fn push_page(list: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if list.len() > 1 {
        list.push(',');
    }
    list.push_str(text);
}

/// The stored list of pages' texts in key order: `[`, the texts joined by `,`, `]`.
#[cfg(test)]
pub fn assemble<'t>(texts: impl IntoIterator<Item = &'t str>) -> String {
    let mut out = String::from("[");
    for t in texts {
        push_page(&mut out, t);
    }
    out.push(']');
    out
}

/// What a splice writes, in order: renumber, delete, write.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewrite {
    /// New keys for every page (old, new), when the keys around the rewritten pages had no room
    /// left; empty otherwise. Applied first (the backends move every key out of the way, then
    /// give each its new one).
    pub renumber: Vec<(i64, i64)>,
    /// The pages deleted: keys `.0..=.1` (after renumbering).
    pub delete: Option<(i64, i64)>,
    /// The pages written after the deletion.
    pub write: Vec<Page>,
}

/// One splice planned on a transcript's pages: the words `from..from + remove` replaced by the
/// inserted ones. [`Splice::reads`] names the pages whose text it needs, [`Splice::rewrite`]
/// says what to write given them.
#[derive(Debug)]
pub struct Splice<'a> {
    dir: &'a [Entry],
    insert: Vec<&'a str>,
    /// The directory's pages rewritten (`lo..=hi`, merged neighbours included); `None` when no
    /// page is touched.
    range: Option<(usize, usize)>,
    /// Page `lo` and `hi` before any merge: the splice's first and last page.
    first: usize,
    last: usize,
    /// Words of the first page kept before the splice, and of the last page after it.
    before: usize,
    after: usize,
    merge_prev: bool,
    merge_next: bool,
    g: Geometry,
}

impl<'a> Splice<'a> {
    /// Plans the splice on `dir` (the transcript's pages in key order).
    pub fn plan(
        dir: &'a [Entry],
        from: usize,
        remove: usize,
        insert: &'a str,
        g: Geometry,
    ) -> Result<Splice<'a>, SpliceError> {
        let total: usize = dir.iter().map(|e| e.count.max(0) as usize).sum();
        let out_of_range = SpliceError::OutOfRange {
            from,
            remove,
            words: total,
        };
        if from.checked_add(remove).is_none_or(|end| end > total) {
            return Err(out_of_range);
        }
        let insert = split_encoded(insert).ok_or(SpliceError::Insert)?;
        let mut splice = Splice {
            dir,
            insert,
            range: None,
            first: 0,
            last: 0,
            before: 0,
            after: 0,
            merge_prev: false,
            merge_next: false,
            g,
        };
        if (remove == 0 && splice.insert.is_empty()) || dir.is_empty() {
            return Ok(splice);
        }
        // Each page's first word.
        let mut starts = Vec::with_capacity(dir.len());
        let mut s = 0usize;
        for e in dir {
            starts.push(s);
            s += e.count.max(0) as usize;
        }
        let end = |i: usize| starts[i] + dir[i].count.max(0) as usize;
        let holding = |w: usize| (0..dir.len()).find(|&i| w < end(i));
        let first = if from < total {
            holding(from).ok_or_else(|| out_of_range.clone())?
        } else {
            dir.len() - 1
        };
        let last = if remove > 0 {
            holding(from + remove - 1).ok_or(out_of_range)?
        } else {
            first
        };
        let before = from - starts[first];
        let after = end(last) - (from + remove);
        let left = before + splice.insert.len() + after;
        let (mut lo, mut hi) = (first, last);
        let count = |i: usize| dir[i].count.max(0) as usize;
        if left > 0 && left < g.min() {
            if hi + 1 < dir.len() && left + count(hi + 1) <= g.max() {
                splice.merge_next = true;
                hi += 1;
            } else if lo > 0 && left + count(lo - 1) <= g.max() {
                splice.merge_prev = true;
                lo -= 1;
            }
        }
        splice.range = Some((lo, hi));
        splice.first = first;
        splice.last = last;
        splice.before = before;
        splice.after = after;
        Ok(splice)
    }

    /// Whether the splice changes nothing.
    pub fn is_noop(&self) -> bool {
        self.range.is_none() && self.insert.is_empty()
    }

    /// Keys of the pages whose text [`Splice::rewrite`] needs, in key order: the first and last
    /// page when they keep words, and a merged neighbour.
    pub fn reads(&self) -> Vec<i64> {
        let Some((lo, hi)) = self.range else {
            return Vec::new();
        };
        let mut keys = Vec::new();
        if self.merge_prev {
            keys.push(self.dir[lo].key);
        }
        if self.before > 0 || (self.first == self.last && self.after > 0) {
            keys.push(self.dir[self.first].key);
        }
        if self.after > 0 && self.last != self.first {
            keys.push(self.dir[self.last].key);
        }
        if self.merge_next {
            keys.push(self.dir[hi].key);
        }
        keys
    }

    /// What to write, given the texts of [`Splice::reads`]'s pages in that order.
    pub fn rewrite(&self, texts: &[String]) -> Result<Rewrite, SpliceError> {
        let reads = self.reads();
        if texts.len() != reads.len() {
            return Err(SpliceError::Page(reads.first().copied().unwrap_or(0)));
        }
        // Each read page's words, checked against its count.
        let mut pages = Vec::with_capacity(texts.len());
        for (key, text) in reads.iter().zip(texts) {
            let words = split_objects(text).ok_or(SpliceError::Page(*key))?;
            let expected = self.dir.iter().find(|e| e.key == *key).map(|e| e.count);
            if expected != Some(words.len() as i64) {
                return Err(SpliceError::Page(*key));
            }
            pages.push(words);
        }
        let mut pages = pages.into_iter();
        let mut words: Vec<&str> = Vec::new();
        if self.merge_prev {
            words.extend(pages.next().unwrap_or_default());
        }
        let first = if self.before > 0 || (self.first == self.last && self.after > 0) {
            pages.next().unwrap_or_default()
        } else {
            Vec::new()
        };
        words.extend_from_slice(first.get(..self.before).unwrap_or_default());
        words.extend_from_slice(&self.insert);
        let last = if self.after > 0 && self.last != self.first {
            pages.next().unwrap_or_default()
        } else {
            first.clone()
        };
        if self.after > 0 {
            let kept = last.len().checked_sub(self.after);
            words.extend_from_slice(kept.and_then(|k| last.get(k..)).unwrap_or_default());
        }
        if self.merge_next {
            words.extend(pages.next().unwrap_or_default());
        }
        let chunks = cut(&words, self.g);
        let mut out = Rewrite::default();
        let spacing = self.g.spacing();
        let Some((lo, hi)) = self.range else {
            // No page yet: the inserted words are the transcript's first.
            let mut key = 0i64;
            for (count, text) in chunks {
                out.write.push(Page {
                    key,
                    count: count as i64,
                    text,
                });
                key = key.checked_add(spacing).ok_or(SpliceError::Page(key))?;
            }
            return Ok(out);
        };
        let k = chunks.len() as i64;
        let mut keys: Vec<i64> = self.dir.iter().map(|e| e.key).collect();
        // The keys the new pages may take: from the first rewritten page's to the next page's
        // (exclusive), or `k` spacings after the last page.
        let room = |keys: &[i64]| -> i128 {
            match keys.get(hi + 1) {
                Some(next) => *next as i128 - keys[lo] as i128,
                None => spacing as i128 * k as i128,
            }
        };
        let fits = |keys: &[i64]| {
            room(keys) >= k as i128 && keys[lo] as i128 + room(keys) - 1 <= i64::MAX as i128
        };
        if k > 1 && !fits(&keys) {
            // No integer left between the rewritten pages' key and the next page's: every page
            // gets a new key, with room for the new pages after the rewritten ones.
            let mut renumbered = Vec::with_capacity(keys.len());
            for (j, old) in keys.iter().enumerate() {
                let slot = if j > hi { j as i64 + k } else { j as i64 };
                renumbered.push(slot.checked_mul(spacing).ok_or(SpliceError::Page(*old))?);
            }
            out.renumber = keys
                .iter()
                .copied()
                .zip(renumbered.iter().copied())
                .collect();
            keys = renumbered;
            if !fits(&keys) {
                return Err(SpliceError::Page(keys[lo]));
            }
        }
        let start = keys[lo];
        out.delete = Some((start, keys[hi]));
        let room = room(&keys);
        for (i, (count, text)) in chunks.into_iter().enumerate() {
            let offset = (room * i as i128 / k.max(1) as i128) as i64;
            out.write.push(Page {
                key: start + offset,
                count: count as i64,
                text,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::encode;
    use cuecraft_engine::{Millis, Word};
    use std::collections::BTreeMap;

    fn word(k: usize) -> Word {
        Word::new(
            format!("w{k},\"}}"),
            Millis(k as i64),
            Millis(k as i64 + 1),
            0,
        )
    }

    /// A table of pages in memory, changed as the backends change theirs.
    fn apply(table: &mut BTreeMap<i64, Page>, r: Rewrite) {
        if !r.renumber.is_empty() {
            let old: Vec<Page> = std::mem::take(table).into_values().collect();
            for page in old {
                let new = r
                    .renumber
                    .iter()
                    .find(|(o, _)| *o == page.key)
                    .expect("key");
                table.insert(new.1, Page { key: new.1, ..page });
            }
        }
        if let Some((a, b)) = r.delete {
            let keys: Vec<i64> = table.range(a..=b).map(|(k, _)| *k).collect();
            for k in keys {
                table.remove(&k);
            }
        }
        for p in r.write {
            assert!(table.insert(p.key, p).is_none(), "a key written twice");
        }
    }

    fn splice(
        table: &mut BTreeMap<i64, Page>,
        from: usize,
        remove: usize,
        insert: &[Word],
        g: Geometry,
    ) {
        let dir: Vec<Entry> = table
            .values()
            .map(|p| Entry {
                key: p.key,
                count: p.count,
            })
            .collect();
        let text = encode(insert);
        let s = Splice::plan(&dir, from, remove, &text, g).expect("plan");
        let texts: Vec<String> = s.reads().iter().map(|k| table[k].text.clone()).collect();
        let r = s.rewrite(&texts).expect("rewrite");
        apply(table, r);
    }

    proptest::proptest! {
        /// Any sequence of splices leaves pages whose joined text is the encoding of the words,
        /// every page holding 1 to `max` words.
        #[test]
        fn spliced_pages_join_to_the_encoding_of_the_spliced_words(
            n in 0usize..60,
            edits in proptest::collection::vec((0usize..80, 0usize..30, 0usize..40), 1..30),
            target in 1usize..10,
            spacing in 1i64..5,
        ) {
            let g = Geometry { target, spacing };
            let mut words: Vec<Word> = (0..n).map(word).collect();
            let mut table: BTreeMap<i64, Page> = paginate(&encode(&words), g)
                .expect("pages")
                .into_iter()
                .map(|p| (p.key, p))
                .collect();
            let mut next = 1000;
            for (from, remove, insert) in edits {
                let from = from.min(words.len());
                let remove = remove.min(words.len() - from);
                let new: Vec<Word> = (next..next + insert).map(word).collect();
                next += 100;
                splice(&mut table, from, remove, &new, g);
                words.splice(from..from + remove, new);
                let text = assemble(table.values().map(|p| p.text.as_str()));
                proptest::prop_assert_eq!(&text, &encode(&words));
                for p in table.values() {
                    proptest::prop_assert!(p.count >= 1 && p.count as usize <= g.max(), "{:?}", p.count);
                    proptest::prop_assert_eq!(split_objects(&p.text).map(|w| w.len()), Some(p.count as usize));
                }
            }
        }
    }

    #[test]
    fn a_splice_outside_the_words_or_of_damaged_text_is_refused() {
        let g = Geometry::DEFAULT;
        let pages = paginate(&encode(&(0..5).map(word).collect::<Vec<_>>()), g).expect("pages");
        let dir = [Entry {
            key: pages[0].key,
            count: 5,
        }];
        assert!(matches!(
            Splice::plan(&dir, 4, 2, "[]", g),
            Err(SpliceError::OutOfRange { words: 5, .. })
        ));
        assert!(matches!(
            Splice::plan(&dir, 0, 1, "[{},", g),
            Err(SpliceError::Insert)
        ));
        let s = Splice::plan(&dir, 1, 1, "[]", g).expect("plan");
        assert_eq!(s.reads(), vec![0]);
        let wrong = vec![pages[0].text.split_once("},").expect("two").1.to_string()];
        assert_eq!(s.rewrite(&wrong), Err(SpliceError::Page(0)));
        assert!(Splice::plan(&dir, 5, 0, "[]", g).expect("plan").is_noop());
    }

    #[test]
    fn only_the_touched_pages_are_read_and_written() {
        let g = Geometry::DEFAULT;
        let words: Vec<Word> = (0..100_000).map(word).collect();
        let pages = paginate(&encode(&words), g).expect("pages");
        assert_eq!(pages.len(), 100);
        let dir: Vec<Entry> = pages
            .iter()
            .map(|p| Entry {
                key: p.key,
                count: p.count,
            })
            .collect();
        // One word replaced in the middle: one page read, deleted and written again.
        let one = encode(&[word(7)]);
        let s = Splice::plan(&dir, 50_500, 1, &one, g).expect("plan");
        assert_eq!(s.reads(), vec![50 << 32]);
        let r = s.rewrite(&[pages[50].text.clone()]).expect("rewrite");
        assert_eq!(r.delete, Some((50 << 32, 50 << 32)));
        assert_eq!(r.write.len(), 1);
        assert!(r.renumber.is_empty());
        // 30,000 words removed across pages: the pages between are deleted unread.
        let s = Splice::plan(&dir, 10_500, 30_000, "[]", g).expect("plan");
        assert_eq!(s.reads(), vec![10 << 32, 40 << 32]);
    }
}
