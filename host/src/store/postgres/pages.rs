//! The SQL of a transcript's word pages on Postgres (`word_pages`; what goes in them is decided
//! in `store::pages`, as for SQLite). Readers assemble the stored list in the statement that
//! reads the transcript (`words_of!` in `store.rs`), so the words and the revision are of one
//! snapshot.

use postgres::GenericClient;

use super::error::from_pg as pg;
use crate::store::pages::{paginate, Entry, Geometry, Page, Rewrite, Splice};
use crate::store::{StoreError, StoreResult};

fn insert_pages(
    c: &mut impl GenericClient,
    transcript_id: &str,
    pages: &[Page],
) -> StoreResult<()> {
    if pages.is_empty() {
        return Ok(());
    }
    let keys: Vec<i64> = pages.iter().map(|p| p.key).collect();
    let counts: Vec<i64> = pages.iter().map(|p| p.count).collect();
    let texts: Vec<&str> = pages.iter().map(|p| p.text.as_str()).collect();
    // One statement for all of them: one round trip.
    c.execute(
        "INSERT INTO word_pages (transcript_id, page, n, words)
         SELECT $1, k, n, w FROM unnest($2::BIGINT[], $3::BIGINT[], $4::TEXT[]) AS x(k, n, w)",
        &[&transcript_id, &keys, &counts, &texts],
    )
    .map_err(pg)?;
    Ok(())
}

/// Replaces a transcript's words by `stored` (an encoded list) written whole.
pub fn replace_words(
    c: &mut impl GenericClient,
    transcript_id: &str,
    stored: &str,
    g: Geometry,
) -> StoreResult<()> {
    let pages = paginate(stored, g).ok_or_else(|| {
        StoreError::Other(format!("the words of {transcript_id} are not a word list"))
    })?;
    c.execute(
        "DELETE FROM word_pages WHERE transcript_id = $1",
        &[&transcript_id],
    )
    .map_err(pg)?;
    insert_pages(c, transcript_id, &pages)
}

/// Replaces the words `from..from + remove` of a transcript by `insert` (an encoded list),
/// reading and writing only the pages that hold them. Call it in the transaction that holds the
/// transcript's row lock.
pub fn splice_words(
    c: &mut impl GenericClient,
    transcript_id: &str,
    (from, remove, insert): (usize, usize, &str),
    g: Geometry,
) -> StoreResult<()> {
    let dir: Vec<Entry> = c
        .query(
            "SELECT page, n FROM word_pages WHERE transcript_id = $1 ORDER BY page",
            &[&transcript_id],
        )
        .map_err(pg)?
        .iter()
        .map(|r| Entry {
            key: r.get(0),
            count: r.get(1),
        })
        .collect();
    let splice = Splice::plan(&dir, from, remove, insert, g)
        .map_err(|e| StoreError::Other(e.to_string()))?;
    if splice.is_noop() {
        return Ok(());
    }
    let keys = splice.reads();
    let texts: Vec<String> = if keys.is_empty() {
        Vec::new()
    } else {
        c.query(
            "SELECT words FROM word_pages WHERE transcript_id = $1 AND page = ANY($2)
             ORDER BY page",
            &[&transcript_id, &keys],
        )
        .map_err(pg)?
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let rewrite = splice
        .rewrite(&texts)
        .map_err(|e| StoreError::Other(e.to_string()))?;
    apply(c, transcript_id, &rewrite)
}

fn apply(c: &mut impl GenericClient, transcript_id: &str, r: &Rewrite) -> StoreResult<()> {
    if !r.renumber.is_empty() {
        // Every key out of the way first (negative), then each to its new place.
        let old: Vec<i64> = r.renumber.iter().map(|(o, _)| *o).collect();
        let new: Vec<i64> = r.renumber.iter().map(|(_, n)| *n).collect();
        c.execute(
            "UPDATE word_pages SET page = -1 - page WHERE transcript_id = $1",
            &[&transcript_id],
        )
        .map_err(pg)?;
        c.execute(
            "UPDATE word_pages w SET page = m.new
             FROM unnest($2::BIGINT[], $3::BIGINT[]) AS m(old, new)
             WHERE w.transcript_id = $1 AND w.page = -1 - m.old",
            &[&transcript_id, &old, &new],
        )
        .map_err(pg)?;
    }
    if let Some((a, b)) = r.delete {
        c.execute(
            "DELETE FROM word_pages WHERE transcript_id = $1 AND page BETWEEN $2 AND $3",
            &[&transcript_id, &a, &b],
        )
        .map_err(pg)?;
    }
    insert_pages(c, transcript_id, &r.write)
}
