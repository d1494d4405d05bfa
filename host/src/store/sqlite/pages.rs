//! The SQL of a transcript's word pages (`word_pages`; what goes in them is decided in
//! `store::pages`): reading the stored list, writing it whole, splicing it, and the migration that
//! moved the lists out of `transcripts.words`.

use rusqlite::{params, Connection, OptionalExtension};

use crate::store::pages::{paginate, push_page, Entry, Geometry, Page, Rewrite, Splice};

/// A failure of the pages' logic as a rusqlite error (the store reports it as `Other`).
fn failed(e: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
}

/// The stored words of a transcript: its pages' texts in key order as one list (`[]` when it has
/// none). Run it in the transaction that read the transcript's revision, so both are of one
/// moment.
pub fn read_words(c: &Connection, transcript_id: &str) -> rusqlite::Result<String> {
    let mut stmt =
        c.prepare_cached("SELECT words FROM word_pages WHERE transcript_id = ?1 ORDER BY page")?;
    let mut rows = stmt.query([transcript_id])?;
    let mut list = String::from("[");
    while let Some(r) = rows.next()? {
        let text = r.get_ref(0)?.as_str().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })?;
        push_page(&mut list, text);
    }
    list.push(']');
    Ok(list)
}

fn insert_pages(c: &Connection, transcript_id: &str, pages: &[Page]) -> rusqlite::Result<()> {
    let mut stmt = c.prepare_cached(
        "INSERT INTO word_pages (transcript_id, page, n, words) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for p in pages {
        stmt.execute(params![transcript_id, p.key, p.count, p.text])?;
    }
    Ok(())
}

/// Replaces a transcript's words by `stored` (an encoded list) written whole.
pub fn replace_words(
    c: &Connection,
    transcript_id: &str,
    stored: &str,
    g: Geometry,
) -> rusqlite::Result<()> {
    let pages = paginate(stored, g)
        .ok_or_else(|| failed(format!("the words of {transcript_id} are not a word list")))?;
    c.execute(
        "DELETE FROM word_pages WHERE transcript_id = ?1",
        [transcript_id],
    )?;
    insert_pages(c, transcript_id, &pages)
}

/// Replaces the words `from..from + remove` of a transcript by `insert` (an encoded list),
/// reading and writing only the pages that hold them. Call it inside a write transaction.
pub fn splice_words(
    c: &Connection,
    transcript_id: &str,
    (from, remove, insert): (usize, usize, &str),
    g: Geometry,
) -> rusqlite::Result<()> {
    let dir: Vec<Entry> = c
        .prepare_cached("SELECT page, n FROM word_pages WHERE transcript_id = ?1 ORDER BY page")?
        .query_map([transcript_id], |r| {
            Ok(Entry {
                key: r.get(0)?,
                count: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let splice = Splice::plan(&dir, from, remove, insert, g).map_err(failed)?;
    if splice.is_noop() {
        return Ok(());
    }
    let mut texts = Vec::new();
    for key in splice.reads() {
        texts.push(
            c.prepare_cached(
                "SELECT words FROM word_pages WHERE transcript_id = ?1 AND page = ?2",
            )?
            .query_row(params![transcript_id, key], |r| r.get::<_, String>(0))?,
        );
    }
    let rewrite = splice.rewrite(&texts).map_err(failed)?;
    apply(c, transcript_id, &rewrite)
}

fn apply(c: &Connection, transcript_id: &str, r: &Rewrite) -> rusqlite::Result<()> {
    if !r.renumber.is_empty() {
        // Every key out of the way first (negative), then each to its new place.
        c.execute(
            "UPDATE word_pages SET page = -1 - page WHERE transcript_id = ?1",
            [transcript_id],
        )?;
        let mut stmt = c.prepare_cached(
            "UPDATE word_pages SET page = ?3 WHERE transcript_id = ?1 AND page = ?2",
        )?;
        for (old, new) in &r.renumber {
            stmt.execute(params![transcript_id, -1 - old, new])?;
        }
    }
    if let Some((a, b)) = r.delete {
        c.prepare_cached(
            "DELETE FROM word_pages WHERE transcript_id = ?1 AND page BETWEEN ?2 AND ?3",
        )?
        .execute(params![transcript_id, a, b])?;
    }
    insert_pages(c, transcript_id, &r.write)
}

/// Migration 6's data step: every transcript's words moved from `transcripts.words` into pages
/// (every byte kept as it was), then the column dropped. A list that cannot be cut into its
/// elements is decoded and encoded again; one that does not decode stops the migration (and the
/// server's start) with the transcript named, rather than losing it.
pub fn move_words_to_pages(c: &Connection) -> rusqlite::Result<()> {
    let ids: Vec<String> = c
        .prepare("SELECT id FROM transcripts WHERE words IS NOT NULL ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in ids {
        let words: Option<String> = c
            .query_row("SELECT words FROM transcripts WHERE id = ?1", [&id], |r| {
                r.get(0)
            })
            .optional()?
            .flatten();
        let Some(words) = words else { continue };
        let pages = paginate(&words, Geometry::DEFAULT)
            .or_else(|| {
                let decoded = crate::words::decode(&words)?;
                paginate(&crate::words::encode(&decoded), Geometry::DEFAULT)
            })
            .ok_or_else(|| failed(format!("the stored words of transcript {id} do not decode")))?;
        insert_pages(c, &id, &pages)?;
    }
    c.execute_batch("ALTER TABLE transcripts DROP COLUMN words")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::{SqliteStore, MAIN_DB, MAIN_MIGRATIONS};
    use crate::store::Store;

    #[test]
    fn the_sqlite_store_keeps_the_word_pages_contract() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        crate::store::contract::word_pages(&store, Geometry::DEFAULT.target);
        // Pages of three words with keys two apart: splits, merges and renumbering all the time.
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store = SqliteStore::open(dir.path()).expect("store");
        store.pages = Geometry {
            target: 3,
            spacing: 2,
        };
        crate::store::contract::word_pages(&store, 3);
    }

    #[test]
    fn migration_6_moves_stored_lists_into_pages_byte_for_byte() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A data directory of the version before: the lists in `transcripts.words`.
        let long: Vec<String> = (0..2500)
            .map(|k| {
                format!(
                    "{{\"t\":\"w{k} \\u00e9\",\"s\":{k},\"e\":{},\"p\":0}}",
                    k + 1
                )
            })
            .collect();
        let lists = [
            ("t-long", Some(format!("[{}]", long.join(",")))),
            ("t-empty", Some("[]".to_string())),
            ("t-pending", None),
            // Spaces this version does not write: kept as they were.
            (
                "t-spaced",
                Some("[ {\"t\": \"a\", \"s\": 0, \"e\": 1, \"p\": 0} ]".to_string()),
            ),
        ];
        {
            let mut c = Connection::open(dir.path().join(MAIN_DB)).expect("open");
            super::super::migrate(&mut c, &MAIN_MIGRATIONS[..5], &[]).expect("migrate to 5");
            c.execute_batch(
                "INSERT INTO orgs VALUES ('o', 'O', 1, 1, 0);
                 INSERT INTO members (id, org_id, email, role, joined_at) VALUES ('m', 'o', 'e', 'owner', 0);
                 INSERT INTO jobs (id, org_id, owner_member_id, api_key_id, name, filename, content_type,
                    size_bytes, declared_seconds, price_cents_per_minute, settings, status, language,
                    upload_expires_at, created_at, updated_at)
                 VALUES ('j', 'o', 'm', 'k', 'n', 'f', 'audio/wav', 1, 1, 1, '{}', 'ready', 'en', 0, 0, 0);",
            )
            .expect("rows");
            for (seq, (id, words)) in lists.iter().enumerate() {
                c.execute(
                    "INSERT INTO transcripts (id, job_id, seq, language, kind, status, words, created_at)
                     VALUES (?1, 'j', ?2, 'en', 'translation', 'ready', ?3, 0)",
                    params![id, seq as i64 + 1, words],
                )
                .expect("transcript");
            }
        }
        let store = SqliteStore::open(dir.path()).expect("migrates");
        let read = |id: &str| {
            store
                .transcript_words("j", Some(id))
                .expect("read")
                .expect("ready")
                .words
        };
        assert_eq!(read("t-long"), lists[0].1.clone().expect("long"));
        assert_eq!(read("t-empty"), "[]");
        assert_eq!(read("t-pending"), "[]");
        assert_eq!(read("t-spaced"), lists[3].1.clone().expect("spaced"));
        let (pages, counts): (i64, Vec<i64>) = store
            .main(|c| {
                let n = c.query_row(
                    "SELECT COUNT(*) FROM word_pages WHERE transcript_id = 't-long'",
                    [],
                    |r| r.get(0),
                )?;
                let counts = c
                    .prepare(
                        "SELECT n FROM word_pages WHERE transcript_id = 't-long' ORDER BY page",
                    )?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                Ok((n, counts))
            })
            .expect("pages");
        assert_eq!((pages, counts.iter().sum::<i64>()), (2, 2500));
        // The column is gone: nothing can read a stale copy.
        assert!(store
            .main(|c| c.query_row("SELECT words FROM transcripts", [], |_| Ok(())))
            .is_err());
    }

    #[test]
    fn migration_12_marks_every_cue_of_a_file_timed_by_hand() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let mut c = Connection::open(dir.path().join(MAIN_DB)).expect("open");
            super::super::migrate(&mut c, &MAIN_MIGRATIONS[..11], &[]).expect("migrate to 11");
            c.execute_batch(crate::store::contract::BEFORE_TIMED_PER_CUE)
                .expect("rows");
        }
        let store = SqliteStore::open(dir.path()).expect("migrates");
        crate::store::contract::timed_per_cue(&store);
    }
}
