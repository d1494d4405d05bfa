//! Tuning aid for the speech-onset constants (host/src/pipeline/onsets.rs): on the corpus of
//! `scripts/timing-corpus`, recognises each video's sound once with the default recognizer
//! (Whisper; the words are kept in DIR/NAME.whisper.json for the next run), refines the word
//! times with the given constants, lays the cues out with the default settings, the video's
//! frame rate and its hard cuts, and prints the in-time and out-time errors the way
//! `scripts/score-timing` scores the service. The real scores come from that script, through the
//! service; this only makes trying constants quick.
//!
//! Usage: cargo run --release --example onsets -- DIR PART [raw] [name=value ...]
//! (PART: tune or held; `raw` scores the words as recognised; names are the fields of `Tuning`).
//!
//! Besides the cues it scores the words themselves, as recognised and as refined: the start of
//! each sentence's first word against the sentence's onset, the end of its last word against its
//! offset, and how many other starts and ends were moved (at pauses inside a sentence, which this
//! corpus has no reference for). `PART` = `words` reads DIR as the recognition corpus
//! (`scripts/recognition-corpus`: flite's start of every English word) and scores every start the
//! refinement moved against that word's reference start.

use std::path::Path;

use cuecraft_engine::{layout_with_shots, words_from_raw, FrameRate, Millis, RawWord, Settings};
use cuecraft_host::pipeline::onsets::{refine_with, Tuning};
use cuecraft_host::pipeline::recognizers::from_spec;
use serde_json::Value;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: onsets DIR PART [raw] [name=value ...]");
        std::process::exit(2);
    }
    let (dir, part) = (Path::new(&args[1]), args[2].as_str());
    let mut t = Tuning::default();
    let mut raw = false;
    for kv in &args[3..] {
        if kv == "raw" {
            raw = true;
            continue;
        }
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v: f64 = v.parse().unwrap_or_else(|_| panic!("bad value in {kv}"));
        match k {
            "pause" => t.pause = v,
            "reach_back" => t.reach_back = v,
            "reach_ahead" => t.reach_ahead = v,
            "rise_low" => t.rise_low = v,
            "rise_high" => t.rise_high = v,
            "min_rise" => t.min_rise = v,
            "sustain" => t.sustain = v,
            "gap_share" => t.gap_share = v,
            "gap_reach" => t.gap_reach = v,
            "drop_high" => t.drop_high = v,
            "drop_low" => t.drop_low = v,
            "tail" => t.tail = v,
            _ => panic!("unknown constant {k}"),
        }
    }
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(&format!("{part}-"))
                    && n.ends_with(".json")
                    && !n.contains(".whisper")
            })
        })
        .collect();
    names.sort();
    if part == "words" {
        return recognition_words(dir, &t);
    }
    let settings = Settings::default();
    let (mut ins, mut outs, mut word_err) = (Vec::new(), Vec::new(), (0.0, 0.0, 0usize));
    // (as recognised, refined) errors in seconds of the first words' starts and last words' ends
    // the refinement moved, and the moves it made elsewhere.
    let (mut first_moved, mut last_moved, mut other) = (Vec::new(), Vec::new(), (0usize, 0usize));
    for json in names {
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("read")).expect("json");
        let wav = json.with_extension("wav");
        if !wav.exists() {
            let ok = std::process::Command::new("ffmpeg")
                .args(["-nostdin", "-v", "error", "-y", "-i"])
                .arg(json.with_extension("mkv"))
                .args(["-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le"])
                .arg(&wav)
                .status()
                .expect("ffmpeg");
            assert!(ok.success());
        }
        let cache = json.with_extension("whisper.json");
        let detected: Vec<RawWord> = match std::fs::read_to_string(&cache) {
            Ok(text) => serde_json::from_str(&text).expect("cached words"),
            Err(_) => {
                let r = from_spec("whisper").expect("whisper");
                let words = r.recognize(&wav, "auto", &[]).expect("recognition").words;
                std::fs::write(&cache, serde_json::to_string(&words).expect("json"))
                    .expect("cache");
                words
            }
        };
        let mut words = detected.clone();
        if !raw {
            refine_with(&wav, &mut words, &t).expect("refine");
        }
        let fr = FrameRate::parse(reference["frameRate"].as_str().expect("rate")).expect("rate");
        let cuts: Vec<Millis> = reference["cuts"]
            .as_array()
            .expect("cuts")
            .iter()
            .map(|c| Millis((c["time"].as_f64().unwrap() * 1000.0).round() as i64))
            .collect();
        let sentences: Vec<(f64, f64, i64, i64)> = reference["sentences"]
            .as_array()
            .expect("sentences")
            .iter()
            .map(|s| {
                (
                    s["onset"].as_f64().unwrap(),
                    s["offset"].as_f64().unwrap(),
                    s["firstFrame"].as_i64().unwrap(),
                    s["lastFrame"].as_i64().unwrap(),
                )
            })
            .collect();
        // Word-start error of each sentence's first word, as recognised and refined.
        for (k, s) in sentences.iter().enumerate() {
            let first = |ws: &[RawWord]| {
                ws.iter()
                    .filter(|w| nearest(&sentences, (w.start + w.end) / 2.0) == k)
                    .map(|w| w.start)
                    .next()
            };
            if let (Some(a), Some(b)) = (first(&detected), first(&words)) {
                word_err.0 += (a - s.0).abs();
                word_err.1 += (b - s.0).abs();
                word_err.2 += 1;
            }
        }
        // Each word's sentence (by the recognised midpoint), and the words that start and end one.
        let sentence_of: Vec<usize> = detected
            .iter()
            .map(|w| nearest(&sentences, (w.start + w.end) / 2.0))
            .collect();
        for i in 0..words.len() {
            let k = sentence_of[i];
            let first = i == 0 || sentence_of[i - 1] != k;
            let last = i + 1 == words.len() || sentence_of[i + 1] != k;
            if words[i].start != detected[i].start {
                if first {
                    let on = sentences[k].0;
                    first_moved.push(((detected[i].start - on).abs(), (words[i].start - on).abs()));
                } else {
                    other.0 += 1;
                }
            }
            if words[i].end != detected[i].end {
                if last {
                    let off = sentences[k].1;
                    last_moved.push(((detected[i].end - off).abs(), (words[i].end - off).abs()));
                } else {
                    other.1 += 1;
                }
            }
        }
        let words = words_from_raw(&words).expect("words");
        let cues = layout_with_shots(&words, &settings, fr, &cuts);
        // Half a second in frames, rounded as engine/src/layout/shots.rs does.
        let (num, den) = (i64::from(fr.num), i64::from(fr.den));
        let half = num / (2 * den) + i64::from(num % (2 * den) > den);
        let cut_frames: Vec<i64> = cuts.iter().map(|&c| fr.frame_round(c)).collect();
        // Each cue's sentences (by its words' midpoints).
        let of: Vec<Vec<usize>> = cues
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| nearest(&sentences, (w.start.0 + w.end.0) as f64 / 2000.0))
                    .collect()
            })
            .collect();
        let (mut vin, mut vout) = (Vec::new(), Vec::new());
        for (k, &(_, _, first, last)) in sentences.iter().enumerate() {
            let Some(ci) = of.iter().position(|s| s.contains(&k)) else {
                continue;
            };
            if of[ci].first() == Some(&k) {
                let target = start_cut(&cut_frames, first, half).unwrap_or(first);
                let err = fr.frame_round(cues[ci].start) - target;
                if std::env::var_os("VERBOSE").is_some() && err.abs() > 3 {
                    eprintln!(
                        "  in {err:+}: cue {} first frame {first} target {target} word {:?} {}",
                        fr.frame_round(cues[ci].start),
                        cues[ci].words[0].text,
                        cues[ci].words[0].start.0,
                    );
                }
                vin.push(err);
            }
            let cj = of.iter().rposition(|s| s.contains(&k)).unwrap();
            if of[cj].last() == Some(&k) {
                vout.push(fr.frame_round(cues[cj].end) - (last + 1));
            }
        }
        println!(
            "{:<12} in {:?}\n{:<12} out {:?}",
            reference["name"].as_str().unwrap_or("?"),
            vin,
            "",
            vout
        );
        ins.extend(vin);
        outs.extend(vout);
    }
    report("in-time", &ins);
    report("out-time", &outs);
    println!(
        "out-times before the last frame of speech: {}",
        outs.iter().filter(|&&e| e < 0).count()
    );
    moved_row(
        "starts of first words moved (|start - onset|)",
        &first_moved,
    );
    moved_row("ends of last words moved (|end - offset|)", &last_moved);
    println!(
        "moved inside a sentence (no reference): {} starts, {} ends",
        other.0, other.1
    );
    println!(
        "first word of a sentence, mean |start - onset|: recognised {:.0} ms, refined {:.0} ms ({} sentences)",
        1000.0 * word_err.0 / word_err.2.max(1) as f64,
        1000.0 * word_err.1 / word_err.2.max(1) as f64,
        word_err.2
    );
}

fn report(what: &str, errs: &[i64]) {
    let n = errs.len().max(1) as f64;
    let mean = errs.iter().map(|e| e.abs() as f64).sum::<f64>() / n;
    let signed = errs.iter().map(|&e| e as f64).sum::<f64>() / n;
    let mut abs: Vec<i64> = errs.iter().map(|e| e.abs()).collect();
    abs.sort_unstable();
    let p90 = abs
        .get(((abs.len() as f64 * 0.9).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0);
    let within = errs.iter().filter(|e| e.abs() <= 3).count() as f64 / n;
    println!(
        "{what}: {} cues, mean |error| {mean:.2} frames (signed {signed:+.2}), p90 {p90}, within 3 frames {:.1}%",
        errs.len(),
        100.0 * within
    );
}

/// The sentence nearest `t` (0 inside its span).
fn nearest(sentences: &[(f64, f64, i64, i64)], t: f64) -> usize {
    let d = |s: &(f64, f64, i64, i64)| (s.0 - t).max(t - s.1).max(0.0);
    (0..sentences.len())
        .min_by(|&a, &b| d(&sentences[a]).total_cmp(&d(&sentences[b])))
        .unwrap_or(0)
}

/// The professional in-time of speech starting at frame `f`: a cut at most 2 frames after it, or
/// one at most half a second before it (the engine's rule, engine/src/layout/shots.rs).
fn start_cut(cuts: &[i64], f: i64, half: i64) -> Option<i64> {
    cuts.iter()
        .copied()
        .filter(|&c| c > f && c - f <= 2)
        .max()
        .or_else(|| {
            cuts.iter()
                .copied()
                .filter(|&c| c <= f && f - c <= half)
                .max()
        })
}

/// One line on words the refinement moved: (as recognised, refined) absolute errors, seconds.
fn moved_row(what: &str, errs: &[(f64, f64)]) {
    let n = errs.len().max(1) as f64;
    let mean = |f: fn(&(f64, f64)) -> f64| 1000.0 * errs.iter().map(f).sum::<f64>() / n;
    let mut after: Vec<f64> = errs.iter().map(|e| e.1).collect();
    after.sort_by(f64::total_cmp);
    let p90 = after
        .get(((after.len() as f64 * 0.9).ceil() as usize).saturating_sub(1))
        .map_or(0.0, |v| 1000.0 * v);
    println!(
        "{what}: {} words, mean {:.0} -> {:.0} ms, p90 refined {p90:.0} ms, worse {} (by more than 10 ms {})",
        errs.len(),
        mean(|e| e.0),
        mean(|e| e.1),
        errs.iter().filter(|e| e.1 > e.0).count(),
        errs.iter().filter(|e| e.1 > e.0 + 0.010).count(),
    );
}

/// The recognition corpus: every word start the refinement moved, against flite's start of the
/// same word (the reference word of the same letters nearest the recognised start, within 1 s).
fn recognition_words(dir: &Path, t: &Tuning) {
    let letters = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().contains(".whisper")
                && p.with_extension("wav").exists()
        })
        .collect();
    names.sort();
    let (mut all, mut unmatched, mut ends) = (Vec::new(), 0usize, 0usize);
    for json in names {
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("read")).expect("json");
        let wav = json.with_extension("wav");
        let cache = json.with_extension("whisper.json");
        let detected: Vec<RawWord> = match std::fs::read_to_string(&cache) {
            Ok(text) => serde_json::from_str(&text).expect("cached words"),
            Err(_) => {
                let r = from_spec("whisper").expect("whisper");
                let lang = reference["language"].as_str().unwrap_or("auto");
                let words = r.recognize(&wav, lang, &[]).expect("recognition").words;
                std::fs::write(&cache, serde_json::to_string(&words).expect("json"))
                    .expect("cache");
                words
            }
        };
        let refs: Vec<(String, f64)> = reference["sentences"]
            .as_array()
            .expect("sentences")
            .iter()
            .flat_map(|s| s["words"].as_array().expect("words").iter())
            .filter_map(|w| Some((letters(w["text"].as_str()?), w["start"].as_f64()?)))
            .collect();
        let mut words = detected.clone();
        refine_with(&wav, &mut words, t).expect("refine");
        let mut moved = Vec::new();
        for (d, w) in detected.iter().zip(&words) {
            ends += usize::from(d.end != w.end);
            if d.start == w.start {
                continue;
            }
            let key = letters(&d.text);
            let near = refs
                .iter()
                .filter(|(k, r)| *k == key && (r - d.start).abs() < 1.0)
                .min_by(|a, b| (a.1 - d.start).abs().total_cmp(&(b.1 - d.start).abs()));
            match near {
                Some(&(_, r)) => {
                    if std::env::var_os("VERBOSE").is_some() && (w.start - r).abs() > 0.04 {
                        eprintln!(
                            "  {:?}: reference {r:.3}, recognised {:.3}, refined {:.3}",
                            d.text, d.start, w.start
                        );
                    }
                    moved.push(((d.start - r).abs(), (w.start - r).abs()))
                }
                None => unmatched += 1,
            }
        }
        moved_row(
            &format!(
                "{:<12} starts moved",
                reference["name"].as_str().unwrap_or("?")
            ),
            &moved,
        );
        all.extend(moved);
    }
    moved_row("all files, starts moved", &all);
    println!("starts moved without a reference word: {unmatched}; ends moved: {ends}");
}
