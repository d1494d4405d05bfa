//! Integer time: milliseconds and rational frame rates, so rounding happens once and never drifts.

use std::ops::{Add, Sub};

/// A point or span of media time in whole milliseconds. Negative values are representable so that
/// offsets can be applied before clamping, but the engine never emits a negative cue time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub i64);

impl Millis {
    /// Zero milliseconds.
    pub const ZERO: Millis = Millis(0);

    /// Converts seconds to milliseconds, rounding half away from zero; `None` for NaN, infinities
    /// and values beyond ±2^53 ms (about 285,000 years), which no media has.
    pub fn from_secs_f64(secs: f64) -> Option<Millis> {
        if !secs.is_finite() {
            return None;
        }
        let ms = (secs * 1000.0).round();
        if ms.abs() > 9_007_199_254_740_992.0 {
            return None;
        }
        Some(Millis(ms as i64))
    }

    /// The time in seconds, for JSON output.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Saturating addition, so hostile inputs cannot overflow.
    pub fn saturating_add(self, other: Millis) -> Millis {
        Millis(self.0.saturating_add(other.0))
    }

    /// Saturating subtraction.
    pub fn saturating_sub(self, other: Millis) -> Millis {
        Millis(self.0.saturating_sub(other.0))
    }
}

impl Add for Millis {
    type Output = Millis;
    fn add(self, rhs: Millis) -> Millis {
        self.saturating_add(rhs)
    }
}

impl Sub for Millis {
    type Output = Millis;
    fn sub(self, rhs: Millis) -> Millis {
        self.saturating_sub(rhs)
    }
}

/// A frame rate kept as a rational (`30000/1001`), never as a decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRate {
    /// Numerator: frames per `den` seconds. Never zero.
    pub num: u32,
    /// Denominator. Never zero.
    pub den: u32,
}

impl Default for FrameRate {
    /// 25 fps, the rate of audio-only jobs.
    fn default() -> Self {
        FrameRate::FPS_25
    }
}

impl FrameRate {
    /// 25 frames per second (PAL, and every audio-only job).
    pub const FPS_25: FrameRate = FrameRate { num: 25, den: 1 };

    /// A frame rate from its parts; `None` when either is zero or the rate is absurd (over 1000 fps).
    pub fn new(num: u32, den: u32) -> Option<FrameRate> {
        if num == 0 || den == 0 || num / den > 1000 {
            return None;
        }
        Some(FrameRate { num, den })
    }

    /// Parses `25`, `29.97`, `30000/1001` or `23.976`. Decimal NTSC rates map to their rationals.
    pub fn parse(text: &str) -> Option<FrameRate> {
        let text = text.trim();
        if let Some((n, d)) = text.split_once('/') {
            return FrameRate::new(n.trim().parse().ok()?, d.trim().parse().ok()?);
        }
        match text {
            "23.976" | "23.98" => return FrameRate::new(24000, 1001),
            "29.97" => return FrameRate::new(30000, 1001),
            "59.94" => return FrameRate::new(60000, 1001),
            _ => {}
        }
        if let Ok(n) = text.parse::<u32>() {
            return FrameRate::new(n, 1);
        }
        let f: f64 = text.parse().ok()?;
        if !(f.is_finite() && f > 0.0 && f <= 1000.0) {
            return None;
        }
        FrameRate::new((f * 1000.0).round() as u32, 1000)
    }

    /// The nominal integer rate (30 for 30000/1001), as timecodes count frames.
    pub fn nominal(self) -> u32 {
        (self.num + self.den / 2) / self.den.max(1)
    }

    /// The index of the frame that contains `t` (floor), for times >= 0.
    pub fn frame_floor(self, t: Millis) -> i64 {
        // In i64 when the product fits (any real media time and rate), the same exact integer
        // arithmetic as the i128 fallback, which is several times slower to divide.
        let (num, den) = (self.num as i64, self.den as i64);
        match t.0.checked_mul(num) {
            Some(x) => x.div_euclid(1000 * den),
            None => (t.0 as i128 * self.num as i128).div_euclid(1000 * self.den as i128) as i64,
        }
    }

    /// The index of the nearest frame boundary to `t`, rounding half up.
    pub fn frame_round(self, t: Millis) -> i64 {
        let (num, den) = (self.num as i64, self.den as i64);
        let scaled =
            t.0.checked_mul(num)
                .and_then(|x| x.checked_mul(2))
                .and_then(|x| x.checked_add(1000 * den));
        match scaled {
            Some(x) => x.div_euclid(2000 * den),
            None => {
                let scaled = t.0 as i128 * self.num as i128 * 2 + 1000 * self.den as i128;
                scaled.div_euclid(2000 * self.den as i128) as i64
            }
        }
    }

    /// The start time of frame `frame`, rounded half up to a millisecond.
    pub fn frame_start(self, frame: i64) -> Millis {
        let (num, den) = (self.num as i64, self.den as i64);
        match frame
            .checked_mul(2000 * den)
            .and_then(|x| x.checked_add(num))
        {
            Some(x) => Millis(x.div_euclid(2 * num)),
            None => {
                let scaled = frame as i128 * 1000 * self.den as i128 * 2 + self.num as i128;
                Millis(scaled.div_euclid(2 * self.num as i128) as i64)
            }
        }
    }

    /// `t` moved to the nearest frame boundary.
    pub fn snap(self, t: Millis) -> Millis {
        self.frame_start(self.frame_round(t))
    }

    /// The duration of `frames` frames, rounded half up to a millisecond.
    pub fn frames_duration(self, frames: u32) -> Millis {
        self.frame_start(frames as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntsc_frames_snap_to_the_rational_grid() {
        let fps = FrameRate::new(30000, 1001).unwrap();
        assert_eq!(fps.frame_start(30), Millis(1001));
        assert_eq!(fps.snap(Millis(1000)), Millis(1001));
        assert_eq!(fps.frame_round(Millis(1001)), 30);
    }

    #[test]
    fn pal_frames_are_40_ms() {
        let fps = FrameRate::FPS_25;
        assert_eq!(fps.frames_duration(3), Millis(120));
        assert_eq!(fps.snap(Millis(1019)), Millis(1000));
        assert_eq!(fps.snap(Millis(1020)), Millis(1040));
    }

    #[test]
    fn parses_decimal_and_rational_rates() {
        assert_eq!(FrameRate::parse("29.97"), FrameRate::new(30000, 1001));
        assert_eq!(FrameRate::parse("24000/1001"), FrameRate::new(24000, 1001));
        assert_eq!(FrameRate::parse("25"), Some(FrameRate::FPS_25));
        assert_eq!(FrameRate::parse("0"), None);
        assert_eq!(FrameRate::parse("x"), None);
    }

    #[test]
    fn seconds_round_to_millis_and_reject_nan() {
        assert_eq!(Millis::from_secs_f64(1.0005), Some(Millis(1001)));
        assert_eq!(Millis::from_secs_f64(f64::NAN), None);
        assert_eq!(Millis::from_secs_f64(f64::INFINITY), None);
    }
}
