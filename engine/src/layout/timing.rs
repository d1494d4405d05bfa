//! Cue times on the frame grid: shift, reading pace, minimum and maximum duration, the frame gap
//! between cues and chaining of short gaps. Works in whole frames so nothing drifts, and streams:
//! a cue is finished as soon as the next one's start is known.

use super::prepare::Texts;
use super::{shots, Params};
use crate::{Cue, FrameRate, Millis};

/// What timing needs of one cue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Span {
    /// First word's start, ms.
    pub start: i64,
    /// Last word's end, ms.
    pub end: i64,
    /// Graphemes of the cue text (for reading pace).
    pub chars: u32,
    /// Timed by hand (`Break::Timed` after its last word): the cue shows its words' times, no
    /// timing rule applied to it.
    pub timed: bool,
}

/// The first frame index whose start is at or after `t`.
fn frame_ceil(fr: FrameRate, t: i64) -> i64 {
    let f = fr.frame_floor(Millis(t));
    if fr.frame_start(f).0 < t {
        f + 1
    } else {
        f
    }
}

/// Chaining closes gaps up to this long (ms).
const CHAIN_MS: i64 = 500;

/// A cue waiting for the next one's start.
#[derive(Clone, Debug)]
pub struct Pending {
    /// Start frame.
    s: i64,
    span: Span,
    lines: Vec<String>,
    speaker: u32,
    /// First word (reading position) the cue owns.
    pub lo: usize,
}

impl Pending {
    /// Whether `self` and `other` are the same cue but for the position of their first word.
    pub fn same_but_lo(&self, other: &Pending) -> bool {
        self.s == other.s
            && self.span == other.span
            && self.lines == other.lines
            && self.speaker == other.speaker
    }
}

/// Builds the cues in order, timing each once the next cue's start is known.
pub struct Emitter<'a> {
    p: &'a Params,
    fr: FrameRate,
    texts: Texts<'a>,
    cues: Vec<Cue>,
    pending: Option<Pending>,
    /// Cues finished before this emitter took over (a layout resumed from a saved state).
    before: usize,
    /// The shot changes from here on (`p.cuts[cut_lo..]`) are the only ones the rules can still
    /// pick: every one before is more than half a second before each start still to be timed.
    cut_lo: usize,
}

impl<'a> Emitter<'a> {
    /// An emitter for cues over `texts.words`, after `before` finished cues and with the last
    /// one `pending` (see [`Emitter::state`]).
    pub fn resume(
        p: &'a Params,
        fr: FrameRate,
        texts: Texts<'a>,
        capacity: usize,
        before: usize,
        pending: Option<Pending>,
    ) -> Emitter<'a> {
        Emitter {
            p,
            fr,
            texts,
            cues: Vec::with_capacity(capacity),
            pending,
            before,
            cut_lo: 0,
        }
    }

    /// How many cues are finished (all told) and the one waiting for its successor.
    pub fn state(&self) -> (usize, Option<&Pending>) {
        (self.before + self.cues.len(), self.pending.as_ref())
    }

    /// The cues finished by this emitter, the pending one left out.
    pub fn into_finished(self) -> Vec<Cue> {
        self.cues
    }

    /// Adds the next cue; it owns the words from reading position `lo` on.
    pub fn push(&mut self, span: Span, lines: Vec<String>, speaker: u32, lo: usize) {
        let mut s = self
            .fr
            .frame_round(Millis((span.start + self.p.shift).max(0)));
        let lo = if self.before == 0 && self.cues.is_empty() && self.pending.is_none() {
            // The first cue also owns any invisible words before it.
            0
        } else {
            lo
        };
        if !self.p.cuts.is_empty() {
            self.pass_cuts(s);
            if !span.timed {
                s = self.start_at_cut(s);
            }
        }
        if let Some(mut prev) = self.pending.take() {
            // Starts never go backwards (cue starts are sorted word starts; clamping keeps that).
            s = s.max(prev.s);
            let e = self.end_frame(&mut prev, Some(s));
            // Words closer together than the gap: the later cue moves on (not when it is timed
            // by hand: it starts where its first word does).
            if !span.timed {
                s = s.max(e + self.p.gap_frames as i64);
            }
            self.emit(prev, e, lo);
        }
        self.pending = Some(Pending {
            s,
            span,
            lines,
            speaker,
            lo,
        });
    }

    /// The cues, the last one timed against no successor.
    pub fn finish(mut self, n_words: usize) -> Vec<Cue> {
        if let Some(mut prev) = self.pending.take() {
            let e = self.end_frame(&mut prev, None);
            self.emit(prev, e, n_words);
        }
        self.cues
    }

    /// Inlined into [`Emitter::push`], as [`Emitter::end_frame`] is: two calls less per cue.
    #[inline(always)]
    fn emit(&mut self, c: Pending, e: i64, hi: usize) {
        let texts = self.texts;
        let lo = c.lo.min(hi);
        let words = match (texts.order, texts.words.get(lo..hi)) {
            // Input already in reading order: the words are one slice.
            (None, Some(ws)) => ws.to_vec(),
            _ => {
                // Sized once: `filter_map` gives no exact size hint, and growing the Vec
                // reallocated several times per cue.
                let mut words = Vec::with_capacity(hi - lo);
                words.extend((lo..hi).filter_map(|k| texts.words.get(texts.index(k)).cloned()));
                words
            }
        };
        self.cues.push(Cue {
            index: (self.before + self.cues.len()) as u32 + 1,
            start: self.fr.frame_start(c.s),
            end: self.fr.frame_start(e),
            speaker: c.speaker,
            lines: c.lines,
            words,
        });
    }

    /// The end frame of `c` when the next cue starts at frame `next`. Always after `c.s`; at least
    /// N frames before `next` when `next - N > c.s`. The shot-change rules may move `c.s` on to
    /// a cut (never past the end).
    #[inline(always)]
    fn end_frame(&self, c: &mut Pending, next: Option<i64>) -> i64 {
        if c.span.timed {
            return self.hand_end(c);
        }
        let (e, base) = self.base_parts(c, next);
        if self.p.cuts.is_empty() {
            e
        } else {
            self.end_at_cut(c, next, e, &base)
        }
    }

    /// The end frame of a cue timed by hand: its last word's end, whatever the rules would ask.
    #[inline(always)]
    fn hand_end(&self, c: &Pending) -> i64 {
        self.fr
            .frame_round(Millis((c.span.end + self.p.shift).max(0)))
            .max(c.s + 1)
    }

    /// Moves `cut_lo` on before the next cue, whose words start at frame `s`. Every start the
    /// rules look at from now on is at least half a second after the earlier of `s` and the
    /// pending cue's first word (a start moves back to a cut by at most half a second, and
    /// otherwise only on), so the cuts a second before that are passed for good.
    #[cold]
    fn pass_cuts(&mut self, s: i64) {
        let first = self.pending.as_ref().map_or(s, |prev| {
            let f = self
                .fr
                .frame_round(Millis((prev.span.start + self.p.shift).max(0)));
            f.min(s)
        });
        let past = first - 2 * self.p.half - 2;
        self.cut_lo += shots::point(&self.p.cuts[self.cut_lo..], |c| c < past);
    }

    /// Where the next cue, whose words start at frame `s`, starts by the shot-change rules
    /// ([`shots::start_cut`]): on a cut just before `s`, when moving back to it takes no time the
    /// pending cue needs (its end is no earlier than it would be without the move or without a
    /// next cue). A cut just after `s` is left to [`Emitter::end_at_cut`], which knows the end.
    #[cold]
    fn start_at_cut(&self, s: i64) -> i64 {
        let Some(c) = shots::start_cut(&self.p.cuts[self.cut_lo..], s, self.p.half) else {
            return s;
        };
        if c > s {
            return s;
        }
        let Some(prev) = &self.pending else {
            return c;
        };
        let n_gap = self.p.gap_frames as i64;
        if prev.span.timed {
            // Its end is its own: the cut is kept when it leaves the gap after that end.
            return if c - n_gap >= self.hand_end(prev) {
                c
            } else {
                s
            };
        }
        let kept = c - n_gap > prev.s
            && self.base_end(prev, Some(c))
                >= self.base_end(prev, None).min(self.base_end(prev, Some(s)));
        if kept {
            c
        } else {
            s
        }
    }

    /// The end frame `e` of `c` moved by the shot-change rules ([`shots::end_at_cuts`]): never
    /// before its speech, reading pace or minimum duration, never into the gap before the next
    /// cue or past the maximum duration. A start just before a cut moves on to it when the cue
    /// still has all the time it needs.
    #[cold]
    fn end_at_cut(&self, c: &mut Pending, next: Option<i64>, e: i64, base: &Base) -> i64 {
        let (p, fr) = (self.p, self.fr);
        let (speech, needed) = (base.speech, base.needed);
        let room_from = |s: i64| {
            let mut room = next.map_or(i64::MAX, |ns| ns - p.gap_frames as i64);
            if let Some(md) = p.max_dur {
                room = room.min(fr.frame_floor(Millis(fr.frame_start(s).0 + md)));
            }
            room
        };
        let (e0, mut e) = (e, e);
        let cuts = &p.cuts[self.cut_lo..];
        // The end its text needs, as `base_parts` worked it out unless the start moves on to a
        // cut.
        let mut need = base.want.max(speech);
        if let Some(cut) = shots::start_cut(cuts, c.s, p.half).filter(|&cut| cut > c.s) {
            let cut_ms = fr.frame_start(cut).0;
            let cut_need = frame_ceil(fr, cut_ms + needed).max(speech);
            if cut < e && cut_need <= room_from(cut) {
                c.s = cut;
                e = e.max(cut_need);
                need = cut_need;
            }
        }
        let s = c.s;
        let room = room_from(s);
        // Only the cuts up to the next cue's start: one during the next cue is its own.
        let cuts = match next {
            Some(ns) => &cuts[..shots::point(cuts, |c| c <= ns)],
            None => cuts,
        };
        let mut at = shots::end_at_cuts(cuts, s, e, need, room, p.half);
        if let Some(ns) = next {
            // Moved on to a cut or stayed up past one: a short gap left to the next cue is
            // chained as before.
            let chained = ns - p.gap_frames as i64;
            let short = fr.frame_start(ns).0 - fr.frame_start(at).0 <= CHAIN_MS;
            if at > e0
                && short
                && chained > at
                && chained <= room
                && shots::hung_cut(cuts, s, chained, p.half).is_none()
            {
                at = chained;
            }
        }
        at.max(s + 1)
    }

    /// What the cue's text and the settings need it to stay up for, ms: the minimum duration,
    /// the reading pace, no flash, at most the maximum duration.
    #[inline(always)]
    fn needed(&self, sp: &Span) -> i64 {
        let p = self.p;
        let mut needed = p.min_dur;
        if p.pace {
            // Exactly the time the text needs at the pace, rounded up to a millisecond (the
            // segmentation's per-character figure is rounded up, a bound for its costs only).
            needed = needed.max((sp.chars as i64 * 1000 + p.cps - 1) / p.cps);
        }
        if p.avoid_flash {
            needed = needed.max(super::segment::FLASH_MS);
        }
        if let Some(md) = p.max_dur {
            needed = needed.min(md);
        }
        needed
    }

    /// [`Emitter::end_frame`] without the shot-change rules.
    #[inline(always)]
    fn base_end(&self, c: &Pending, next: Option<i64>) -> i64 {
        self.base_parts(c, next).0
    }

    /// [`Emitter::base_end`], and what it worked out on the way that the shot-change rules read
    /// again (each a division or two).
    #[inline(always)]
    fn base_parts(&self, c: &Pending, next: Option<i64>) -> (i64, Base) {
        let (p, fr, sp, s) = (self.p, self.fr, &c.span, c.s);
        let n_gap = p.gap_frames as i64;
        let s_ms = fr.frame_start(s).0;
        let speech = fr.frame_round(Millis((sp.end + p.shift).max(0)));
        let mut e = speech.max(s + 1);
        // The longest the cue may last, in frames (at least one).
        let max_end = p
            .max_dur
            .map(|md| (fr.frame_floor(Millis(s_ms + md))).max(s + 1));
        let needed = self.needed(sp);
        let want = frame_ceil(fr, s_ms + needed);
        let limit = next.map(|ns| ns - n_gap);
        if want > e {
            // Extend into the following silence, never past the next cue minus the gap.
            e = match limit {
                Some(l) => want.min(l.max(e)),
                None => want,
            };
        }
        if let (Some(ns), Some(l)) = (next, limit) {
            let gap_ms = fr.frame_start(ns).0 - fr.frame_start(e).0;
            if gap_ms <= CHAIN_MS {
                // Chaining: the gap is closed to exactly N frames.
                e = l;
            }
            e = e.min(l);
        }
        if let Some(me) = max_end {
            e = e.min(me);
        }
        let base = Base {
            speech,
            needed,
            want,
        };
        (e.max(s + 1), base)
    }
}

/// What [`Emitter::base_parts`] works out of a cue besides its end frame.
struct Base {
    /// The frame its speech ends on.
    speech: i64,
    /// [`Emitter::needed`].
    needed: i64,
    /// The first frame by which it has been up for `needed`.
    want: i64,
}
