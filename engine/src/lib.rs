//! cuecraft-engine turns timed words into subtitle cues a professional subtitler would sign off.
//!
//! It is pure: no I/O, no async, no clock, no logging, and no panics on any input. Time is integer
//! [`Millis`] throughout; frame rates are rationals ([`FrameRate`]).
//!
//! ```
//! use cuecraft_engine::{layout, FrameRate, Millis, Settings, Word};
//! let words = vec![
//!     Word::new("Hello", Millis(0), Millis(400), 0),
//!     Word::new("world.", Millis(450), Millis(900), 0),
//! ];
//! let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
//! assert_eq!(cues[0].lines, vec!["Hello world.".to_string()]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod analysis;
mod layout;
mod lead_in;
pub mod punctuate;
pub mod qc;
pub mod settings;
pub mod text;
mod time;
mod word;

pub use layout::{layout, layout_with_shots, pin, relayout, CueSplice, Layout};
pub use lead_in::{apply_lead_in, MAX_LEAD_IN_FRAMES};
pub use settings::{
    ContentProfile, FieldError, ForbiddenRule, PartialSettings, Settings, SubtitleMode,
};
pub use time::{FrameRate, Millis};
pub use word::{words_from_raw, Break, Cue, RawWord, Word, WordError};
