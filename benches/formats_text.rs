//! Throughput of the SRT, WebVTT and ASS writers and readers on a 10-hour cue list (about 10,800
//! cues, generated deterministically), in bytes of subtitle text per second.
//! Targets: >= 1 GB/s of SRT and WebVTT output, >= 300 MB/s of ASS output, on one core.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{convert_streaming, parse, write, Format, Streamed, WriteOptions};

const WORDS: &str = "the subtitle reads well when lines are balanced, and never too long. Où \
    êtes-vous allé? —Yes. we can't stay here tonight because everyone is waiting for us downstairs. \
    Really? I thought so";

/// Ten hours of cues: one every 3 to 4 s, one or two lines of up to 42 characters.
fn ten_hours() -> Vec<Cue> {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize
    };
    let mut cues = Vec::new();
    let mut t = 0i64;
    while t < 10 * 3_600_000 {
        let n_lines = 1 + next() % 2;
        let mut lines = Vec::with_capacity(n_lines);
        for _ in 0..n_lines {
            let mut line = String::new();
            loop {
                let w = words[next() % words.len()];
                if !line.is_empty() && line.len() + 1 + w.len() > 42 {
                    break;
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(w);
            }
            lines.push(line);
        }
        let dur = 1_200 + (next() % 2_300) as i64;
        cues.push(Cue::from_lines(
            cues.len() as u32 + 1,
            Millis(t),
            Millis(t + dur),
            lines,
        ));
        t += dur + 120 + (next() % 400) as i64;
    }
    cues
}

fn bench(c: &mut Criterion) {
    let cues = ten_hours();
    let opts = WriteOptions {
        title: "Benchmark".into(),
        language: "en".into(),
        ..WriteOptions::default()
    };
    for (format, name) in [
        (Format::Srt, "srt"),
        (Format::WebVtt, "vtt"),
        (Format::Ass, "ass"),
    ] {
        let mut out = Vec::new();
        write(format, &cues, &opts, &mut out).expect("writing to memory");
        let len = out.len() as u64;

        let mut g = c.benchmark_group(format!("formats_text/{name}"));
        g.sample_size(20);
        g.measurement_time(Duration::from_secs(4));
        g.warm_up_time(Duration::from_secs(1));
        g.throughput(Throughput::Bytes(len));
        g.bench_function(format!("write {} cues", cues.len()), |b| {
            let mut buf = Vec::with_capacity(out.len());
            b.iter(|| {
                buf.clear();
                write(format, black_box(&cues), &opts, &mut buf).expect("writing to memory");
                black_box(buf.len())
            })
        });
        g.bench_function(format!("parse {} bytes", len), |b| {
            b.iter(|| {
                parse(format, black_box(&out))
                    .expect("own output parses")
                    .len()
            })
        });
        if format == Format::Srt {
            // The one-pass conversion `cuecraft convert` uses: SRT in, WebVTT out, no cue list.
            g.bench_function(
                format!("convert to vtt in one pass, {} bytes in", len),
                |b| {
                    let mut buf = Vec::with_capacity(out.len() * 2);
                    b.iter(|| {
                        buf.clear();
                        let r = convert_streaming(
                            Format::Srt,
                            Format::WebVtt,
                            black_box(&out),
                            &opts,
                            &mut buf,
                        );
                        assert!(matches!(r, Ok(Streamed::Written)));
                        black_box(buf.len())
                    })
                },
            );
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
