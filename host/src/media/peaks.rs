//! The waveform's pyramid: the stored peaks ([`Object::Peaks`](super::Object::Peaks), one byte
//! per 1/[`PEAKS_PER_SECOND`](super::PEAKS_PER_SECOND) s) are level 0; each coarser level holds
//! the largest of every [`FACTOR`] values of the level below, down to the first level of at most
//! [`TOP`] values. The coarser levels are stored together as one object
//! ([`Object::PeakLevels`](super::Object::PeakLevels), level 1 first), made once, so the editor
//! reads the few hundred bytes a view of a 3-hour file needs instead of its 540 KB.

use std::io::{self, Write};

use super::{MediaStore, Object};

/// How many values of a level make one of the level above.
pub const FACTOR: u64 = 4;
/// The coarsest level has at most this many values.
pub const TOP: u64 = 1024;

/// How many values each level has, level 0 (`level0` values) first.
pub fn level_counts(level0: u64) -> Vec<u64> {
    let mut counts = vec![level0];
    while let Some(&n) = counts.last() {
        if n <= TOP {
            break;
        }
        counts.push(n.div_ceil(FACTOR));
    }
    counts
}

/// Where level `level` (1 or more) starts in the stored levels object, and how many values it
/// has; `None` for level 0 (the peaks object itself) or a level the pyramid does not have.
pub fn level_span(level0: u64, level: usize) -> Option<(u64, u64)> {
    let counts = level_counts(level0);
    if level == 0 || level >= counts.len() {
        return None;
    }
    Some((counts[1..level].iter().sum(), counts[level]))
}

/// The coarser levels of `level0`, level 1 first, as stored.
pub fn coarser_levels(level0: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut below: Vec<u8> = level0.to_vec();
    while below.len() as u64 > TOP {
        let level: Vec<u8> = below
            .chunks(FACTOR as usize)
            .map(|c| c.iter().copied().max().unwrap_or(0))
            .collect();
        out.extend_from_slice(&level);
        below = level;
    }
    out
}

/// Stores the coarser levels of `level0` (nothing when level 0 is small enough on its own).
pub fn store_levels(store: &dyn MediaStore, job_id: &str, level0: &[u8]) -> io::Result<()> {
    let levels = coarser_levels(level0);
    if levels.is_empty() {
        return Ok(());
    }
    let mut w = store.create(job_id, Object::PeakLevels)?;
    w.write_all(&levels)?;
    w.commit()
}

/// The job's level counts (level 0 first), after making its coarser levels if the store does not
/// have them yet (a job made before they existed): `None` when the job has no peaks.
pub fn ensure_levels(store: &dyn MediaStore, job_id: &str) -> io::Result<Option<Vec<u64>>> {
    let Some(n0) = store.size(job_id, Object::Peaks)? else {
        return Ok(None);
    };
    let counts = level_counts(n0);
    let want: u64 = counts[1..].iter().sum();
    if want > 0 && store.size(job_id, Object::PeakLevels)? != Some(want) {
        let level0 = store.read(job_id, Object::Peaks)?.unwrap_or_default();
        store_levels(store, job_id, &level0)?;
    }
    Ok(Some(counts))
}

/// `count` values of level `level` from value `from` (clipped to the level); `None` when the job
/// has no peaks or no such level.
pub fn read_level(
    store: &dyn MediaStore,
    job_id: &str,
    level: usize,
    from: u64,
    count: u64,
) -> io::Result<Option<Vec<u8>>> {
    let Some(counts) = ensure_levels(store, job_id)? else {
        return Ok(None);
    };
    let Some(&n) = counts.get(level) else {
        return Ok(None);
    };
    let from = from.min(n);
    let len = count.min(n - from);
    if len == 0 {
        return Ok(Some(Vec::new()));
    }
    if level == 0 {
        return store.read_range(job_id, Object::Peaks, from, len).map(Some);
    }
    let (at, _) = level_span(counts[0], level).expect("a level of the pyramid");
    store
        .read_range(job_id, Object::PeakLevels, at + from, len)
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_is_the_maximum_of_four_below_down_to_at_most_top_values() {
        // 3 hours at 50 per second.
        let n0 = 3 * 3600 * 50;
        assert_eq!(
            level_counts(n0),
            vec![540_000, 135_000, 33_750, 8_438, 2_110, 528]
        );
        assert_eq!(level_counts(TOP), vec![TOP]);
        assert_eq!(level_counts(0), vec![0]);
        let level0: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let levels = coarser_levels(&level0);
        let counts = level_counts(level0.len() as u64);
        assert_eq!(counts, vec![5000, 1250, 313]);
        assert_eq!(levels.len() as u64, 1250 + 313);
        let (at, n) = level_span(5000, 1).expect("level 1");
        assert_eq!((at, n), (0, 1250));
        for (i, v) in levels[..1250].iter().enumerate() {
            assert_eq!(*v, *level0[i * 4..(i * 4 + 4)].iter().max().unwrap());
        }
        let (at, n) = level_span(5000, 2).expect("level 2");
        assert_eq!((at, n), (1250, 313));
        // The last value of a level covers what is left (5000 / 4 / 4 = 312.5).
        assert_eq!(
            levels[at as usize + 312],
            *levels[1248..1250].iter().max().unwrap()
        );
        assert_eq!(level_span(5000, 0), None);
        assert_eq!(level_span(5000, 3), None);
    }
}
