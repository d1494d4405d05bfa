//! The Postgres schema: versioned migrations of the main schema (`public`) and of the ledger
//! (schema `billing`), applied on start under an advisory lock so that any number of processes
//! may start at once.
//!
//! The meaning of every table and column is the SQLite store's (`store/sqlite`): times are Unix
//! milliseconds in BIGINT, JSON documents (settings, words, highlights) are TEXT, hashes BYTEA.
//! Differences that Postgres needs: `name` and `email` columns sort bytewise (`COLLATE "C"`, as
//! SQLite's BINARY does, so the project list's keyset order does not depend on the server's
//! locale); the queue carries its lease (`worker`, `lease_until`) because several processes claim
//! from it; the rate limit's buckets are a table (UNLOGGED: losing them in a crash only forgets
//! the last minute's counts) with one function doing the check and the count in one round trip.

use postgres::Client;

/// The advisory lock held while migrating ("cuecraft" in ASCII).
const MIGRATION_LOCK: i64 = 0x6375_6563_7261_6674;

/// Migrations of the main schema, in order; version = index + 1.
pub const MAIN: &[&str] = &[
    // 1: the SQLite store's schema up to its migration 3, with the queue's lease and the shared
    // rate limit.
    r#"CREATE TABLE orgs (
        id TEXT PRIMARY KEY,
        name TEXT COLLATE "C" NOT NULL,
        max_bytes BIGINT NOT NULL,
        max_seconds DOUBLE PRECISION NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE members (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        email TEXT COLLATE "C" NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        joined_at BIGINT NOT NULL,
        left_at BIGINT,
        password_hash TEXT
    );
    CREATE INDEX members_org ON members(org_id);
    CREATE INDEX members_email ON members(lower(email));
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        member_id TEXT NOT NULL REFERENCES members(id),
        key_hash BYTEA NOT NULL UNIQUE,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
    );
    CREATE TABLE folders (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        name TEXT COLLATE "C" NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE presets (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        name TEXT COLLATE "C" NOT NULL,
        settings TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE platform (
        key TEXT PRIMARY KEY,
        value BIGINT NOT NULL
    );
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        owner_member_id TEXT NOT NULL REFERENCES members(id),
        api_key_id TEXT NOT NULL,
        folder_id TEXT,
        preset_id TEXT,
        name TEXT COLLATE "C" NOT NULL,
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        declared_seconds DOUBLE PRECISION NOT NULL,
        measured_seconds DOUBLE PRECISION,
        price_cents_per_minute BIGINT NOT NULL,
        settings TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        language TEXT NOT NULL,
        frame_num BIGINT,
        frame_den BIGINT,
        upload_expires_at BIGINT NOT NULL,
        uploaded_at BIGINT,
        highlights TEXT,
        chapters TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE INDEX jobs_org ON jobs(org_id);
    CREATE INDEX jobs_created ON jobs(created_at);
    CREATE INDEX jobs_status ON jobs(status) WHERE status IN ('uploading', 'transcribing', 'formatting');
    CREATE INDEX jobs_org_created ON jobs(org_id, created_at, id);
    CREATE INDEX jobs_org_updated ON jobs(org_id, updated_at, id);
    CREATE INDEX jobs_org_name ON jobs(org_id, name, id);
    CREATE INDEX jobs_owner_created ON jobs(owner_member_id, created_at, id);
    CREATE INDEX jobs_folder ON jobs(folder_id, created_at, id);
    CREATE TABLE transcripts (
        id TEXT PRIMARY KEY,
        job_id TEXT NOT NULL REFERENCES jobs(id),
        seq BIGINT NOT NULL,
        language TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('original', 'clean', 'translation')),
        label TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
        error TEXT,
        words TEXT,
        revision BIGINT NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        UNIQUE (job_id, seq)
    );
    CREATE TABLE login_links (
        token_hash BYTEA PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        expires_at BIGINT NOT NULL,
        used_at BIGINT
    );
    CREATE TABLE sessions (
        token_hash BYTEA PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        csrf TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE INDEX sessions_member ON sessions(member_id);
    CREATE TABLE folder_members (
        folder_id TEXT NOT NULL REFERENCES folders(id),
        member_id TEXT NOT NULL REFERENCES members(id),
        PRIMARY KEY (folder_id, member_id)
    );
    CREATE INDEX folder_members_member ON folder_members(member_id);
    CREATE TABLE revisions (
        transcript_id TEXT NOT NULL REFERENCES transcripts(id),
        revision BIGINT NOT NULL,
        words TEXT NOT NULL,
        member_id TEXT,
        note TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (transcript_id, revision)
    );
    -- The work queue. A row is free when lease_until is NULL or in the past (its worker died or
    -- let it go with a delay); a worker claims it by setting worker and lease_until, keeps it
    -- with heartbeats, and deletes it when the task is done. Times on the database's clock.
    CREATE TABLE queue (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id TEXT NOT NULL,
        task TEXT NOT NULL CHECK (task IN ('job', 'clean')),
        enqueued_at BIGINT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        worker TEXT,
        lease_until BIGINT,
        UNIQUE (job_id, task)
    );
    CREATE INDEX queue_free ON queue(lease_until, seq);
    -- The rate limit shared by every API process: requests per key and second, a rolling minute.
    CREATE UNLOGGED TABLE rate_buckets (
        key TEXT NOT NULL,
        second BIGINT NOT NULL,
        n BIGINT NOT NULL,
        PRIMARY KEY (key, second)
    );
    -- Counts a request of key_ under limit_ per rolling 60 s: returns 0 when it is allowed (and
    -- counted), else the whole seconds until one more request fits (refused ones do not count).
    -- The key's requests are serialised by a transaction-scoped advisory lock, so two API
    -- processes cannot both take the last place.
    CREATE FUNCTION rate_check(key_ TEXT, limit_ BIGINT) RETURNS BIGINT
    LANGUAGE plpgsql AS $$
    DECLARE
        now_ BIGINT := floor(extract(epoch FROM clock_timestamp()));
        total BIGINT;
        freed BIGINT := 0;
        b RECORD;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(key_, 7));
        DELETE FROM rate_buckets WHERE key = key_ AND second <= now_ - 60;
        SELECT COALESCE(SUM(n), 0) INTO total FROM rate_buckets WHERE key = key_;
        IF total >= limit_ THEN
            FOR b IN SELECT second, n FROM rate_buckets WHERE key = key_ ORDER BY second LOOP
                freed := freed + b.n;
                IF freed >= total - limit_ + 1 THEN
                    RETURN GREATEST(b.second + 60 - now_, 1);
                END IF;
            END LOOP;
            RETURN 60;
        END IF;
        INSERT INTO rate_buckets (key, second, n) VALUES (key_, now_, 1)
            ON CONFLICT (key, second) DO UPDATE SET n = rate_buckets.n + 1;
        -- Keys that went quiet leave at most a minute of rows; sweep them now and then.
        IF random() < 0.001 THEN
            DELETE FROM rate_buckets WHERE second <= now_ - 60;
        END IF;
        RETURN 0;
    END $$;"#,
    // 2: Idempotency-Key claims of POST /jobs (the SQLite store's migration 5).
    "CREATE TABLE idempotency_keys (
        org_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash BYTEA NOT NULL,
        job_id TEXT,
        response TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (org_id, key)
    );
    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);",
    // 3: a transcript's words in pages (`store::pages`; the SQLite store's migration 6). The
    // lists move into pages of 1,000 words: `json_array_elements` of a `json` value gives each
    // element's text exactly as stored, so the pages join back to the same bytes.
    "CREATE TABLE word_pages (
        transcript_id TEXT NOT NULL REFERENCES transcripts(id) ON DELETE CASCADE,
        page BIGINT NOT NULL,
        n BIGINT NOT NULL,
        words TEXT NOT NULL,
        PRIMARY KEY (transcript_id, page)
    );
    INSERT INTO word_pages (transcript_id, page, n, words)
    SELECT t.id, ((e.k - 1) / 1000) * 4294967296, count(*), string_agg(e.v::TEXT, ',' ORDER BY e.k)
    FROM transcripts t, json_array_elements(t.words::JSON) WITH ORDINALITY AS e(v, k)
    WHERE t.words IS NOT NULL
    GROUP BY t.id, (e.k - 1) / 1000;
    ALTER TABLE transcripts DROP COLUMN words;",
    // 4: the project's lead-in in frames (the SQLite store's migration 7).
    "ALTER TABLE jobs ADD COLUMN lead_in_frames BIGINT NOT NULL DEFAULT 0;",
    // 5: how far a running job's recognition has come (the SQLite store's migration 8).
    "CREATE TABLE job_progress (
        job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
        share DOUBLE PRECISION NOT NULL,
        seconds_left DOUBLE PRECISION,
        at BIGINT NOT NULL
    );",
    // 6: the id of the request that created the job (the SQLite store's migration 9).
    "ALTER TABLE jobs ADD COLUMN request_id TEXT;",
    // 7: a video job's shot changes (the SQLite store's migration 10).
    "ALTER TABLE jobs ADD COLUMN shot_changes TEXT;",
    // 8: the project's speaker names (the SQLite store's migration 11).
    "ALTER TABLE jobs ADD COLUMN speaker_names TEXT;",
    // 9: words timed by hand marked per cue (the SQLite store's migration 12,
    // `store::pages::TIMED_PER_CUE`).
    crate::store::pages::TIMED_PER_CUE,
];

/// Migrations of the ledger's schema `billing`, in order.
pub const BILLING: &[&str] = &[
    // 1: the ledger. amount_cents > 0 adds credit; < 0 spends it. One row per (job, kind).
    "CREATE TABLE billing.ledger (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        org_id TEXT NOT NULL,
        job_id TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('credit', 'charge', 'settle', 'refund')),
        amount_cents BIGINT NOT NULL,
        note TEXT,
        created_at BIGINT NOT NULL,
        UNIQUE (job_id, kind)
    );
    CREATE INDEX ledger_org ON billing.ledger(org_id);",
];

/// Applies the migrations not yet recorded in `schema.migrations`, each in one transaction.
pub(crate) fn apply(
    client: &mut Client,
    schema: &str,
    migrations: &[&str],
) -> Result<u32, postgres::Error> {
    client.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.migrations (
             version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
    ))?;
    let done: i32 = client
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0) FROM {schema}.migrations"),
            &[],
        )?
        .get(0);
    let mut applied = 0;
    for (i, sql) in migrations.iter().enumerate() {
        let version = i as i32 + 1;
        if version <= done {
            continue;
        }
        let mut tx = client.transaction()?;
        tx.batch_execute(sql)?;
        tx.execute(
            &format!("INSERT INTO {schema}.migrations (version, applied_at) VALUES ($1, $2)"),
            &[&version, &crate::util::now_ms()],
        )?;
        tx.commit()?;
        applied += 1;
    }
    Ok(applied)
}

/// Migrates both schemas of the database `client` is connected to; returns how many migrations
/// were applied. Processes starting together wait for each other on an advisory lock, so each
/// migration runs once.
pub fn migrate(client: &mut Client) -> Result<u32, postgres::Error> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = apply(client, "public", MAIN)
        .and_then(|a| apply(client, "billing", BILLING).map(|b| a + b));
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let applied = result?;
    unlocked?;
    Ok(applied)
}
