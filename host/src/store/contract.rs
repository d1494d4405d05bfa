//! Checks of the [`Store`] contract that every backend must pass, run by each backend's tests on
//! a real database (SQLite file, PostgreSQL server), so the backends cannot drift apart.

use std::sync::Barrier;

use super::{KeyClaim, NewJob, NewOrgOwner, QueueStats, Store, StoreError, IDEMPOTENCY_TTL_MS};

fn job(id: &str) -> NewJob {
    NewJob {
        id: id.into(),
        org_id: "idem-o".into(),
        owner_member_id: "idem-m".into(),
        api_key_id: "idem-k".into(),
        folder_id: None,
        preset_id: None,
        name: "n".into(),
        filename: "n.wav".into(),
        content_type: "audio/wav".into(),
        size_bytes: 10,
        declared_seconds: 1.0,
        price_cents_per_minute: 1,
        settings: "{}".into(),
        language: "en".into(),
        upload_expires_at: 0,
        created_at: 0,
        request_id: Some(format!("req-{id}")),
    }
}

/// The organisation, owner and key that [`job`]'s jobs belong to.
fn create_org(s: &dyn Store) {
    s.create_org_with_owner(&NewOrgOwner {
        org_id: "idem-o",
        org_name: "Org",
        max_bytes: 1 << 30,
        max_seconds: 36000.0,
        member_id: "idem-m",
        email: "m@example.com",
        key_id: "idem-k",
        key_hash: b"idem-hash",
        now: 0,
    })
    .expect("org");
}

/// `Idempotency-Key` claims: new, in flight, replayed, reused; per organisation; forgotten after
/// a day, after a failure, or when abandoned; exactly one of 16 racing claims is new.
pub fn idempotency(s: &dyn Store) {
    create_org(s);
    let claim = |key: &str, hash: &[u8], now| {
        s.claim_idempotency_key("idem-o", key, hash, now)
            .expect("claim")
    };

    assert_eq!(claim("key", b"a", 1000), KeyClaim::New);
    assert_eq!(claim("key", b"a", 1001), KeyClaim::InFlight);
    assert_eq!(claim("key", b"b", 1002), KeyClaim::Reused);
    s.insert_job_for_key(&job("j1"), "key", b"a", "{\"id\":\"j1\"}")
        .expect("insert");
    let stored = s.job("j1").expect("job").expect("the job");
    // The creating request's id is kept with the job, for its pipeline steps' log lines.
    assert_eq!(stored.request_id.as_deref(), Some("req-j1"));
    assert_eq!(
        claim("key", b"a", 1003),
        KeyClaim::Replay("{\"id\":\"j1\"}".into())
    );
    assert_eq!(claim("key", b"b", 1004), KeyClaim::Reused);
    // Another organisation's key of the same name is its own.
    assert_eq!(
        s.claim_idempotency_key("idem-o2", "key", b"b", 1005).ok(),
        Some(KeyClaim::New)
    );
    // A day later the key is free again.
    assert_eq!(claim("key", b"b", 1000 + IDEMPOTENCY_TTL_MS), KeyClaim::New);

    // A failed request releases its claim.
    assert_eq!(claim("k2", b"a", 0), KeyClaim::New);
    s.release_idempotency_key("idem-o", "k2", b"a")
        .expect("release");
    assert_eq!(claim("k2", b"a", 10), KeyClaim::New);
    assert_eq!(claim("k2", b"a", 20), KeyClaim::InFlight);
    // Its request died: after a minute without a response the key is taken afresh, and the
    // first request can no longer complete it.
    assert_eq!(claim("k2", b"a", 70_000), KeyClaim::New);
    s.insert_job_for_key(&job("j2"), "k2", b"a", "second")
        .expect("the new claim completes");
    assert!(matches!(
        s.insert_job_for_key(&job("j3"), "k2", b"a", "first"),
        Err(StoreError::Conflict(_))
    ));
    assert!(s.job("j3").expect("job").is_none(), "nothing half-written");

    let barrier = Barrier::new(16);
    let claims: Vec<KeyClaim> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    s.claim_idempotency_key("idem-o", "race", b"a", 5)
                        .expect("claim")
                })
            })
            .collect();
        threads.into_iter().filter_map(|t| t.join().ok()).collect()
    });
    assert_eq!(claims.len(), 16);
    let new = claims.iter().filter(|c| **c == KeyClaim::New).count();
    let in_flight = claims.iter().filter(|c| **c == KeyClaim::InFlight).count();
    assert_eq!((new, in_flight), (1, 15), "{claims:?}");
}

/// A word of the splice check: text with the characters a stored list must keep exactly (a
/// separator, quotes, braces, an escape, non-ASCII), a line or cue break now and then.
fn page_word(k: u64) -> cuecraft_engine::Word {
    use cuecraft_engine::{Break, Millis, Word};
    let mut w = Word::new(
        format!("w{k},\"{{}}\\é"),
        Millis(k as i64 * 10),
        Millis(k as i64 * 10 + 5),
        (k % 3) as u32,
    );
    w.break_after = match k % 7 {
        0 => Some(Break::Line),
        3 => Some(Break::Cue),
        _ => None,
    };
    w
}

/// The editor's saves as splices on a store that cuts words into pages of about `target` words
/// (its geometry, `store::pages`): many random splices (inserts, removes, replacements, at page
/// edges, growing a page past twice `target`, emptying pages and the whole list), and after each
/// every reader (`transcript_words`, `original_words`, `clean_source`) gives exactly
/// `words::encode` of the expected words, at the expected revision. A stale revision writes
/// nothing (words, revision, history, settings); a splice outside the words fails and writes
/// nothing; the settings of an edit are stored with it. Lists written whole (the clean version,
/// a translation) read back byte for byte.
pub fn word_pages(s: &dyn Store, target: usize) {
    use super::{Formatted, Recognized, Saved, WordsEdit};
    use crate::words::encode;

    s.create_org_with_owner(&NewOrgOwner {
        org_id: "pages-o",
        org_name: "Org",
        max_bytes: 1 << 30,
        max_seconds: 36000.0,
        member_id: "pages-m",
        email: "p@example.com",
        key_id: "pages-k",
        key_hash: b"pages-hash",
        now: 0,
    })
    .expect("org");
    let mut new_job = job("pages-j");
    new_job.org_id = "pages-o".into();
    new_job.owner_member_id = "pages-m".into();
    new_job.api_key_id = "pages-k".into();
    s.insert_job(&new_job).expect("job");
    assert!(s.start_transcribing("pages-j", 1).expect("transcribing"));
    let mut words: Vec<cuecraft_engine::Word> = (0..5 * target as u64 + 3).map(page_word).collect();
    let recognised = encode(&words);
    s.store_original(
        "pages-j",
        &Recognized {
            transcript_id: "pages-t".into(),
            language: "en".into(),
            words: recognised.clone(),
            measured_seconds: 1.0,
            frame_num: 25,
            frame_den: 1,
        },
        2,
    )
    .expect("original");
    s.finish_formatting(
        "pages-j",
        &Formatted {
            clean_id: "pages-c".into(),
            clean_label: "Clean".into(),
            language: "en".into(),
            highlights: None,
            chapters: None,
        },
        -1,
        3,
    )
    .expect("formatting");

    let read = |s: &dyn Store| {
        let stored = s
            .transcript_words("pages-j", Some("pages-t"))
            .expect("read")
            .expect("ready");
        let (_, original) = s
            .original_words("pages-j")
            .expect("read")
            .expect("original");
        let clean = s.clean_source("pages-j").expect("read").expect("clean");
        assert_eq!(original, stored.words, "original_words");
        assert_eq!(clean.words, stored.words, "clean_source");
        (stored.revision, stored.words)
    };
    assert_eq!(read(s), (0, recognised.clone()));

    // A small deterministic generator (xorshift), so a failure names a step that repeats.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if n == 0 {
            0
        } else {
            (state % n as u64) as usize
        }
    };
    let mut fresh = 1_000_000u64;
    let mut revision = 0i64;
    let mut now = 10i64;
    for step in 0..120 {
        let len = words.len();
        // Where: anywhere, at a page edge (a multiple of `target`, give or take one), either end.
        let from = match next(4) {
            0 => next(len + 1),
            1 => ((next(len / target.max(1) + 1) * target) + next(3)).saturating_sub(1),
            2 => 0,
            _ => len,
        }
        .min(len);
        let room = len - from;
        // What: a few words, about a page, or everything after `from`; inserts of up to three
        // pages grow a page past twice `target` at once.
        let remove = match next(6) {
            0 | 1 => next(3.min(room) + 1),
            2 => next(room.min(2 * target) + 1),
            3 => room,
            _ => 0,
        }
        .min(room);
        let insert = match next(5) {
            0 => 0,
            1 | 2 => next(3) + 1,
            3 => next(target + 1),
            _ => next(3 * target) + 1,
        };
        let inserted: Vec<_> = (fresh..fresh + insert as u64).map(page_word).collect();
        fresh += insert as u64;
        let text = encode(&inserted);
        let change = format!("{{\"from\":{from},\"remove\":{remove},\"insert\":{text}}}");
        now += 1;
        let edit = WordsEdit {
            job_id: "pages-j",
            transcript_id: "pages-t",
            expected: revision,
            from,
            remove,
            insert: &text,
            change: &change,
            member_id: "pages-m",
            note: "splice",
            settings: None,
            lead_in_frames: None,
            now,
        };
        if step % 9 == 4 {
            // Stale: someone saved first. Nothing is written, the settings included.
            let history = s.revisions("pages-t").expect("history").len();
            let settings = s.job("pages-j").expect("job").expect("found").settings;
            let stale = WordsEdit {
                expected: revision - 1,
                settings: Some("{\"stale\":true}"),
                ..edit.clone()
            };
            assert_eq!(
                s.save_words(&stale).expect("save"),
                Saved::Conflict(revision)
            );
            assert_eq!(read(s), (revision, encode(&words)), "step {step}: stale");
            assert_eq!(s.revisions("pages-t").expect("history").len(), history);
            let job = s.job("pages-j").expect("job").expect("found");
            assert_eq!(job.settings, settings, "step {step}: stale settings");
        }
        assert_eq!(
            s.save_words(&edit).expect("save"),
            Saved::Revision(revision + 1),
            "step {step}: {from} {remove} {insert} of {len}"
        );
        revision += 1;
        words.splice(from..from + remove, inserted);
        assert_eq!(
            read(s),
            (revision, encode(&words)),
            "step {step}: {from} {remove} {insert} of {len}"
        );
    }
    // The history: revision 0 is the list as recognised, whole.
    let entries = s.revision_entries("pages-t", 1).expect("history");
    assert_eq!(entries.first(), Some(&recognised));

    // A splice past the end fails and writes nothing.
    let len = words.len();
    let out = WordsEdit {
        job_id: "pages-j",
        transcript_id: "pages-t",
        expected: revision,
        from: len,
        remove: 1,
        insert: "[]",
        change: "{}",
        member_id: "pages-m",
        note: "out of range",
        settings: Some("{\"out\":true}"),
        lead_in_frames: Some(9),
        now: now + 1,
    };
    assert!(s.save_words(&out).is_err());
    assert_eq!(read(s), (revision, encode(&words)));
    assert_ne!(
        s.job("pages-j").expect("job").expect("found").settings,
        "{\"out\":true}"
    );
    // ... nor the lead-in.
    assert_eq!(
        s.job("pages-j")
            .expect("job")
            .expect("found")
            .lead_in_frames,
        0
    );

    // A settings change: the words stay, the settings and the revision move together.
    let before = s.job("pages-j").expect("job").expect("found");
    let settings = WordsEdit {
        from: 0,
        remove: 0,
        insert: "[]",
        settings: Some("{\"maxCharsPerLine\":30}"),
        note: "settings",
        now: before.updated_at,
        ..out
    };
    assert_eq!(
        s.save_words(&settings).expect("save"),
        Saved::Revision(revision + 1)
    );
    let after = s.job("pages-j").expect("job").expect("found");
    assert_eq!(after.settings, "{\"maxCharsPerLine\":30}");
    assert_eq!(after.lead_in_frames, 9);
    // The lead-in alone, outside an edit.
    s.set_job_lead_in("pages-j", 3, after.updated_at)
        .expect("lead-in");
    let set = s.job("pages-j").expect("job").expect("found");
    assert_eq!(
        (set.lead_in_frames, set.settings.as_str()),
        (3, after.settings.as_str())
    );
    assert!(set.updated_at > after.updated_at);
    assert!(after.updated_at > before.updated_at);
    assert_eq!(read(s), (revision + 1, encode(&words)));

    // Emptied, and filled again.
    let all = WordsEdit {
        expected: revision + 1,
        from: 0,
        remove: words.len(),
        insert: "[]",
        settings: None,
        ..settings.clone()
    };
    assert_eq!(
        s.save_words(&all).expect("save"),
        Saved::Revision(revision + 2)
    );
    assert_eq!(read(s), (revision + 2, "[]".to_string()));
    let refill: Vec<_> = (0..3 * target as u64).map(page_word).collect();
    let text = encode(&refill);
    let again = WordsEdit {
        expected: revision + 2,
        insert: &text,
        remove: 0,
        ..all
    };
    assert_eq!(
        s.save_words(&again).expect("save"),
        Saved::Revision(revision + 3)
    );
    assert_eq!(read(s), (revision + 3, text));

    // Lists written whole read back byte for byte: the clean version, a translation (and an
    // empty one).
    let clean: Vec<_> = (0..2 * target as u64 + 1).map(page_word).collect();
    s.finish_clean("pages-c", &encode(&clean), -1)
        .expect("clean");
    let stored = s
        .transcript_words("pages-j", Some("pages-c"))
        .expect("read")
        .expect("ready");
    assert_eq!(stored.words, encode(&clean));
    for n in [0, 1, target * 4 + 1] {
        let list: Vec<_> = (0..n as u64).map(page_word).collect();
        let id = s
            .add_translation("pages-j", "de", "Deutsch", &encode(&list), now + 10)
            .expect("translation");
        let stored = s
            .transcript_words("pages-j", Some(&id))
            .expect("read")
            .expect("ready");
        assert_eq!(stored.words, encode(&list));
    }
}

/// The queue as the metrics read it: a started job waits (since it was enqueued), is running
/// while a worker's lease holds, waits again when the lease runs out or the task is given back,
/// and is gone when finished.
pub fn queue_stats(s: &dyn Store) {
    let stats = |now| s.queue_stats(now).expect("queue stats");
    assert_eq!(stats(0), QueueStats::default());
    create_org(s);
    for id in ["q1", "q2"] {
        s.insert_job(&job(id)).expect("job");
    }
    assert!(s.start_transcribing("q1", 1_000).expect("start"));
    assert!(s.start_transcribing("q2", 2_000).expect("start"));
    let waiting = |n, at| QueueStats {
        waiting: n,
        running: 2 - n,
        oldest_waiting_at: at,
    };
    assert_eq!(stats(3_000), waiting(2, Some(1_000)));
    let first = s
        .claim_task("w1", 3_000, 10_000)
        .expect("claim")
        .expect("a task");
    assert_eq!(first.job_id, "q1");
    assert_eq!(stats(4_000), waiting(1, Some(2_000)));
    let second = s
        .claim_task("w2", 4_000, 10_000)
        .expect("claim")
        .expect("a task");
    assert_eq!(stats(5_000), waiting(0, None));
    // w1's lease runs out at 13 000: its task waits again, with its first enqueue time.
    assert_eq!(stats(13_000), waiting(1, Some(1_000)));
    s.release_task(second.seq, "w2", 20_000).expect("release");
    assert_eq!(stats(13_000), waiting(2, Some(1_000)));
    s.finish_task(first.seq).expect("finish");
    s.finish_task(second.seq).expect("finish");
    assert_eq!(stats(13_000), QueueStats::default());
}

/// A video job's shot changes are kept with the job, in order, replaced by a second write; an
/// audio-only job (never written) has none, and a video without a cut an empty list.
pub fn shot_changes(s: &dyn Store) {
    use cuecraft_engine::Millis;
    create_org(s);
    s.insert_job(&job("video")).expect("insert");
    s.insert_job(&job("audio")).expect("insert");
    assert_eq!(
        s.job("video").expect("job").expect("the job").shot_changes,
        None
    );
    let cuts = [Millis(1200), Millis(2200), Millis(3_600_041)];
    s.set_shot_changes("video", &cuts).expect("set");
    let got = |id: &str| s.job(id).expect("job").expect("the job").shot_changes;
    assert_eq!(got("video"), Some(cuts.to_vec()));
    assert_eq!(got("audio"), None);
    s.set_shot_changes("video", &[]).expect("set");
    assert_eq!(got("video"), Some(Vec::new()));
    s.set_shot_changes("video", &cuts[1..]).expect("set");
    assert_eq!(got("video"), Some(cuts[1..].to_vec()));
    // A job that does not exist is no error and makes nothing.
    s.set_shot_changes("nobody", &cuts).expect("set");
    assert!(s.job("nobody").expect("job").is_none());
}

/// A project's speaker names are kept with the job, replaced whole by each write (a name taken
/// away is gone), text of any script kept exactly; each write moves `updatedAt` on; a job never
/// named has none.
pub fn speaker_names(s: &dyn Store) {
    use crate::store::SpeakerNames;
    create_org(s);
    s.insert_job(&job("named")).expect("insert");
    s.insert_job(&job("other")).expect("insert");
    let got = |id: &str| s.job(id).expect("job").expect("the job");
    assert!(got("named").speaker_names.is_empty());
    let before = got("named").updated_at;
    let names: SpeakerNames = [
        (0, "Anna".to_string()),
        (7, "Jürgen \"JJ\" Öz, 李".to_string()),
    ]
    .into_iter()
    .collect();
    s.set_speaker_names("named", &names, before).expect("set");
    let after = got("named");
    assert_eq!(after.speaker_names, names);
    assert!(after.updated_at > before, "updatedAt moves on");
    assert!(got("other").speaker_names.is_empty());
    let fewer: SpeakerNames = [(7, "Ben".to_string())].into_iter().collect();
    s.set_speaker_names("named", &fewer, 0).expect("set");
    assert_eq!(got("named").speaker_names, fewer);
    assert!(got("named").updated_at > after.updated_at);
    s.set_speaker_names("named", &SpeakerNames::new(), 0)
        .expect("set");
    assert!(got("named").speaker_names.is_empty());
    // A job that does not exist is no error and makes nothing.
    s.set_speaker_names("nobody", &names, 0).expect("set");
    assert!(s.job("nobody").expect("job").is_none());
}

/// Rows of the version before [`super::pages::TIMED_PER_CUE`] (plain SQL both backends run):
/// `t-file`, an imported file timed by hand (`"timed"` on its last word only, in the second of
/// its pages) with a history of an edit while it was so, its range laid out again ("Laid cues
/// out again", which ended the mark) and an edit after; `t-pinned`, pinned words timed by the
/// rules, whose text holds the marks' own characters.
pub const BEFORE_TIMED_PER_CUE: &str = r#"
    INSERT INTO orgs VALUES ('o', 'O', 1, 1, 0);
    INSERT INTO members (id, org_id, email, role, joined_at) VALUES ('m', 'o', 'e', 'owner', 0);
    INSERT INTO jobs (id, org_id, owner_member_id, api_key_id, name, filename, content_type,
       size_bytes, declared_seconds, price_cents_per_minute, settings, status, language,
       upload_expires_at, created_at, updated_at)
    VALUES ('j', 'o', 'm', 'k', 'n', 'f', 'audio/wav', 1, 1, 1, '{}', 'ready', 'en', 0, 0, 0);
    INSERT INTO transcripts (id, job_id, seq, language, kind, status, revision, created_at)
    VALUES ('t-file', 'j', 1, 'fr', 'translation', 'ready', 3, 0),
           ('t-pinned', 'j', 2, 'en', 'original', 'ready', 0, 0);
    INSERT INTO word_pages (transcript_id, page, n, words) VALUES
      ('t-file', 0, 2, '{"t":"a","s":0,"e":1,"p":0,"b":"line"},{"t":"b","s":1,"e":2,"p":0,"b":"cue"}'),
      ('t-file', 4294967296, 2, '{"t":"c","s":2,"e":3,"p":0,"b":"cue"},{"t":"d","s":3,"e":4,"p":0,"b":"timed"}'),
      ('t-pinned', 0, 2, '{"t":"x\"b\":\"timed\"}","s":0,"e":1,"p":0,"b":"cue"},{"t":"y","s":1,"e":2,"p":0,"b":"cue"}');
    INSERT INTO revisions (transcript_id, revision, words, member_id, note, created_at) VALUES
      ('t-file', 0, '[{"t":"a","s":0,"e":1,"p":0,"b":"cue"},{"t":"d","s":3,"e":4,"p":0,"b":"timed"}]', NULL, 'As recognised', 0),
      ('t-file', 1, '{"from":0,"remove":1,"insert":[{"t":"a","s":0,"e":1,"p":0,"b":"cue"}]}', 'm', 'Edited text', 1),
      ('t-file', 2, '{"from":1,"remove":1,"insert":[{"t":"d","s":3,"e":4,"p":0,"b":"cue"}]}', 'm', 'Laid cues out again', 2),
      ('t-file', 3, '{"from":0,"remove":1,"insert":[{"t":"e","s":0,"e":1,"p":0,"b":"cue"}]}', 'm', 'Edited text', 3);
"#;

/// After [`super::pages::TIMED_PER_CUE`] on [`BEFORE_TIMED_PER_CUE`]: every cue of the file timed
/// by hand carries the mark, in its pages and in its history up to the re-layout that ended it;
/// nothing else changed.
pub fn timed_per_cue(s: &dyn Store) {
    let words = |id: &str| {
        s.transcript_words("j", Some(id))
            .expect("read")
            .expect("ready")
            .words
    };
    assert_eq!(
        words("t-file"),
        r#"[{"t":"a","s":0,"e":1,"p":0,"b":"line"},{"t":"b","s":1,"e":2,"p":0,"b":"timed"},{"t":"c","s":2,"e":3,"p":0,"b":"timed"},{"t":"d","s":3,"e":4,"p":0,"b":"timed"}]"#
    );
    assert_eq!(
        words("t-pinned"),
        r#"[{"t":"x\"b\":\"timed\"}","s":0,"e":1,"p":0,"b":"cue"},{"t":"y","s":1,"e":2,"p":0,"b":"cue"}]"#
    );
    assert_eq!(
        s.revision_entries("t-file", 3).expect("history"),
        [
            r#"[{"t":"a","s":0,"e":1,"p":0,"b":"timed"},{"t":"d","s":3,"e":4,"p":0,"b":"timed"}]"#,
            r#"{"from":0,"remove":1,"insert":[{"t":"a","s":0,"e":1,"p":0,"b":"timed"}]}"#,
            r#"{"from":1,"remove":1,"insert":[{"t":"d","s":3,"e":4,"p":0,"b":"cue"}]}"#,
            r#"{"from":0,"remove":1,"insert":[{"t":"e","s":0,"e":1,"p":0,"b":"cue"}]}"#,
        ]
    );
}
