//! Criterion bench `formats_binary`: the TTML and EBU-STL writers and readers on a 10-hour cue
//! list (10,000 two-line cues), throughput in bytes of subtitle file written or read.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{parse, to_vec, write, Format, WriteOptions};

/// Ten hours of dialogue: a cue every 3.6 s, lasting 3 s, two lines of 30–40 characters, with
/// the occasional accented letter, ampersand and speaker dash real transcripts have.
fn ten_hours() -> Vec<Cue> {
    const WORDS: [&str; 16] = [
        "the", "camera", "follows", "her", "into", "café", "where", "nobody", "knows", "&", "Zoë",
        "waits", "for", "a", "signal", "again",
    ];
    (0..10_000u32)
        .map(|i| {
            let mut lines = Vec::with_capacity(2);
            for l in 0..2u32 {
                let mut line = String::new();
                let mut k = (i * 7 + l * 3) as usize;
                if i % 5 == 0 {
                    line.push('—');
                }
                while line.chars().count() < 30 {
                    if !line.is_empty() && !line.ends_with('—') {
                        line.push(' ');
                    }
                    line.push_str(WORDS[k % WORDS.len()]);
                    k += 5;
                }
                lines.push(line);
            }
            let start = i64::from(i) * 3_600;
            Cue::from_lines(i + 1, Millis(start), Millis(start + 3_000), lines)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let cues = ten_hours();
    let opts = WriteOptions {
        language: "en".into(),
        title: "Benchmark".into(),
        ..WriteOptions::default()
    };
    for (name, format) in [("ttml", Format::Ttml), ("ebu_stl", Format::EbuStl)] {
        let bytes = to_vec(format, &cues, &opts).expect("writing to a Vec cannot fail");
        let mut group = c.benchmark_group(format!("formats_binary/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let mut out = Vec::with_capacity(bytes.len());
        group.bench_function("write_10h", |b| {
            b.iter(|| {
                out.clear();
                write(format, black_box(&cues), &opts, &mut out).expect("vec write");
                black_box(out.len())
            })
        });
        group.bench_function("read_10h", |b| {
            b.iter(|| black_box(parse(format, black_box(&bytes)).expect("own output parses")))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
