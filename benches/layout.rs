//! Criterion bench `layout`: the engine on a generated 10-hour transcript (about 90,000 words with
//! punctuation, non-ASCII words, pauses and two speakers), smart and greedy, and on 100 hours to
//! show that the time grows linearly.

use criterion::{criterion_group, BatchSize, BenchmarkId, Criterion, Throughput};
use cuecraft_engine::{layout, layout_with_shots, FrameRate, Layout, Millis, Settings, Word};

/// A vocabulary with the shapes real transcripts have: short function words, longer content
/// words, accented and non-Latin words, numbers.
const VOCAB: [&str; 48] = [
    "the",
    "a",
    "and",
    "of",
    "to",
    "in",
    "is",
    "it",
    "that",
    "we",
    "you",
    "they",
    "was",
    "for",
    "on",
    "with",
    "people",
    "city",
    "transport",
    "really",
    "think",
    "because",
    "question",
    "important",
    "everyone",
    "buses",
    "streets",
    "schedule",
    "money",
    "budget",
    "council",
    "yesterday",
    "morning",
    "café",
    "naïve",
    "über",
    "façade",
    "São",
    "Paulo",
    "Zürich",
    "東京",
    "مرحبا",
    "שלום",
    "2024",
    "forty-two",
    "infrastructure",
    "honestly",
    "okay",
];

/// Deterministic pseudo-random numbers (a 64-bit LCG), so every run benches the same words.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// About 2.5 words per second of media: sentences of 4 to 20 words, commas now and then, a
/// pause after each sentence, the speaker changing every few sentences.
fn transcript(hours: i64) -> Vec<Word> {
    let mut rng = Lcg(42);
    let end = hours * 3_600_000;
    let mut words = Vec::with_capacity((hours * 9_000) as usize);
    let mut t: i64 = 0;
    let mut speaker = 0;
    while t < end {
        let len = 4 + rng.next() % 17;
        for k in 0..len {
            let mut text = VOCAB[(rng.next() % VOCAB.len() as u64) as usize].to_string();
            if k == 0 {
                if let Some(first) = text.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
            }
            if k + 1 == len {
                text.push(if rng.below(5) == 0 { '?' } else { '.' });
            } else if rng.below(9) == 0 {
                text.push(',');
            }
            let dur = 150 + (rng.next() % 250) as i64;
            words.push(Word::new(text, Millis(t), Millis(t + dur), speaker));
            t += dur + 40 + (rng.next() % 60) as i64;
        }
        t += 200 + (rng.next() % 900) as i64;
        if rng.below(4) == 0 {
            speaker = 1 - speaker;
        }
    }
    words
}

/// A shot change every 4.37 s from 3.1 s on, for `hours` of media: about as many cuts as cues,
/// so nearly every cue meets one.
fn shot_changes(hours: i64) -> Vec<Millis> {
    (0..)
        .map(|k| Millis(3_100 + 4_370 * k))
        .take_while(|t| t.0 < hours * 3_600_000)
        .collect()
}

fn bench(c: &mut Criterion) {
    let ten = transcript(10);
    let smart = Settings::default();
    let greedy = Settings {
        format_subtitles: false,
        ..Settings::default()
    };
    let mut g = c.benchmark_group("layout_10h");
    g.throughput(Throughput::Elements(ten.len() as u64));
    g.sample_size(20);
    g.bench_with_input(BenchmarkId::new("smart", ten.len()), &ten, |b, w| {
        b.iter_with_large_drop(|| layout(w, &smart, FrameRate::FPS_25))
    });
    g.bench_with_input(BenchmarkId::new("greedy", ten.len()), &ten, |b, w| {
        b.iter_with_large_drop(|| layout(w, &greedy, FrameRate::FPS_25))
    });
    // A video job's layout: the same words timed to a shot change every 4.37 s (issue 24).
    let cuts = shot_changes(10);
    g.bench_with_input(BenchmarkId::new("smart_shots", ten.len()), &ten, |b, w| {
        b.iter_with_large_drop(|| layout_with_shots(w, &smart, FrameRate::FPS_25, &cuts))
    });
    // What the editor keeps: the same layout with its state saved after every chunk.
    g.bench_with_input(BenchmarkId::new("smart_kept", ten.len()), &ten, |b, w| {
        b.iter_with_large_drop(|| Layout::new(w, &smart, FrameRate::FPS_25))
    });
    g.finish();

    // One edit in the editor: a word in the middle corrected, then the kept layout brought up
    // to date (only the chunks around the word are laid out again).
    let mut edited = ten.clone();
    let mid = edited.len() / 2;
    edited[mid].text = format!("{}s", edited[mid].text).into();
    let kept = Layout::new(&ten, &smart, FrameRate::FPS_25);
    let mut g = c.benchmark_group("update_10h");
    g.sample_size(50);
    g.bench_function("one_word", |b| {
        b.iter_batched(
            || kept.clone(),
            |mut l| {
                l.update(&ten, &edited, &smart, FrameRate::FPS_25);
                l
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();

    let hundred = transcript(100);
    let mut g = c.benchmark_group("layout_100h");
    g.throughput(Throughput::Elements(hundred.len() as u64));
    g.sample_size(10);
    g.bench_with_input(
        BenchmarkId::new("smart", hundred.len()),
        &hundred,
        |b, w| b.iter_with_large_drop(|| layout(w, &smart, FrameRate::FPS_25)),
    );
    let cuts = shot_changes(100);
    g.bench_with_input(
        BenchmarkId::new("smart_shots", hundred.len()),
        &hundred,
        |b, w| b.iter_with_large_drop(|| layout_with_shots(w, &smart, FrameRate::FPS_25, &cuts)),
    );
    g.finish();
}

/// CPU time this thread has used, from `/proc/thread-self/schedstat` (Linux), so throughput can
/// also be stated per CPU-second: on a shared, loaded machine wall time overstates the cost.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Words per CPU-second of `runs` layouts of `words`, and per second of the fastest run by the
/// wall clock. On a machine shared with other virtual machines a run is slowed by what they do to
/// the caches and memory without losing its core, which the CPU time still counts (and schedstat
/// only moves at scheduler ticks, too coarse to time one run); the fastest run comes closest to the
/// layout's own cost. Like criterion's `iter_with_large_drop`, the time to free the cues is left out: that is
/// the caller's cost, not the layout's.
fn cpu_rate(words: &[Word], settings: &Settings, runs: u32) -> Option<(f64, f64)> {
    let (mut ns, mut fastest) = (0, f64::MAX);
    for _ in 0..runs {
        let t0 = thread_cpu_ns()?;
        let wall = std::time::Instant::now();
        let cues = std::hint::black_box(layout(
            std::hint::black_box(words),
            settings,
            FrameRate::FPS_25,
        ));
        fastest = fastest.min(wall.elapsed().as_secs_f64());
        ns += thread_cpu_ns()? - t0;
        drop(cues);
    }
    let cpu_rate = words.len() as f64 * f64::from(runs) / (ns as f64 / 1e9);
    Some((cpu_rate, words.len() as f64 / fastest))
}

/// Prints words per CPU-second for 10 h smart and greedy and 100 h smart, words per second of the
/// fastest smart runs, and the ratio of the 100 h to the 10 h time by both.
fn cpu_report() {
    let ten = transcript(10);
    let hundred = transcript(100);
    let smart = Settings::default();
    let greedy = Settings {
        format_subtitles: false,
        ..Settings::default()
    };
    let rates = (
        cpu_rate(&ten, &smart, 30),
        cpu_rate(&ten, &greedy, 20),
        cpu_rate(&hundred, &smart, 5),
    );
    // Calibration: cloning the words (a reference count each) is a floor no layout can beat.
    if let Some(t0) = thread_cpu_ns() {
        for _ in 0..20 {
            std::hint::black_box(std::hint::black_box(&ten).clone());
        }
        if let Some(t1) = thread_cpu_ns() {
            println!(
                "cpu-time: cloning the 10h words {:.2} M words/s",
                ten.len() as f64 * 20.0 / ((t1 - t0) as f64 / 1e9) / 1e6
            );
        }
    }
    if let (Some((s10, s10_fastest)), Some((g10, _)), Some((s100, s100_fastest))) = rates {
        let ratio = |r10: f64, r100: f64| (hundred.len() as f64 / r100) / (ten.len() as f64 / r10);
        println!(
            "cpu-time: 10h smart {:.2} M words/s (fastest of 30 runs {:.2}), 10h greedy {:.2} M words/s, 100h smart {:.2} M words/s (fastest of 5 runs {:.2}), 100h/10h time ratio {:.2} (fastest runs {:.2})",
            s10 / 1e6,
            s10_fastest / 1e6,
            g10 / 1e6,
            s100 / 1e6,
            s100_fastest / 1e6,
            ratio(s10, s100),
            ratio(s10_fastest, s100_fastest)
        );
    }
}

criterion_group!(benches, bench);

/// `cargo bench --bench layout -- layouts N [shots]`: N smart layouts of the 10-hour transcript and
/// nothing else, to be counted by an instruction counter, which no load on the machine moves:
/// `valgrind --tool=cachegrind --cache-sim=no target/release/deps/layout-HASH layouts 1`, less the
/// same with `layouts 0` (making the transcript).
///
/// Prints the fastest layout's wall time (freeing its cues left out, as criterion does), for
/// comparing two builds run in turns.
/// With `shots`, the layouts are timed to the bench's shot changes (`layout_10h/smart_shots`).
fn layouts(n: usize, shots: bool) {
    let ten = transcript(10);
    let cuts = if shots { shot_changes(10) } else { Vec::new() };
    let mut fastest = f64::MAX;
    for _ in 0..n {
        let t = std::time::Instant::now();
        let cues = std::hint::black_box(layout_with_shots(
            std::hint::black_box(&ten),
            &Settings::default(),
            FrameRate::FPS_25,
            &cuts,
        ));
        fastest = fastest.min(t.elapsed().as_secs_f64());
        drop(cues);
    }
    if n > 0 {
        println!("fastest of {n} layouts: {:.2} ms", fastest * 1e3);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "layouts") {
        let n = args.get(at + 1).and_then(|n| n.parse().ok()).unwrap_or(1);
        return layouts(n, args.iter().any(|a| a == "shots"));
    }
    benches();
    // `cargo bench --bench layout -- cpu` runs only the CPU-time report.
    if std::env::args().any(|a| a == "cpu") || std::env::args().len() <= 2 {
        cpu_report();
    }
    Criterion::default().configure_from_args().final_summary();
}
