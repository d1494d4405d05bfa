//! Layout settings: the resolved form `layout` reads, the partial form presets and requests carry,
//! their layering (defaults <- preset <- request) and validation with the contract's field paths.

use crate::time::Millis;

/// Reading pace profile, in characters per second of cue text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ContentProfile {
    /// 17 characters per second.
    #[default]
    Balanced,
    /// 15 characters per second; breaks at shorter pauses and prefers fewer lines.
    Dramatic,
    /// 20 characters per second.
    Dense,
    /// Picks one of the others from the transcript's own speech rate.
    Auto,
}

impl ContentProfile {
    /// The contract's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentProfile::Balanced => "balanced",
            ContentProfile::Dramatic => "dramatic",
            ContentProfile::Dense => "dense",
            ContentProfile::Auto => "auto",
        }
    }

    /// Parses the contract's spelling.
    pub fn parse(s: &str) -> Option<ContentProfile> {
        Some(match s {
            "balanced" => ContentProfile::Balanced,
            "dramatic" => ContentProfile::Dramatic,
            "dense" => ContentProfile::Dense,
            "auto" => ContentProfile::Auto,
            _ => return None,
        })
    }
}

/// How cues are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SubtitleMode {
    /// Ordinary subtitles.
    #[default]
    Default,
    /// Short one-line captions for social video: at most 3 words and 20 characters per cue.
    Audiogram,
}

impl SubtitleMode {
    /// The contract's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SubtitleMode::Default => "default",
            SubtitleMode::Audiogram => "audiogram",
        }
    }

    /// Parses the contract's spelling.
    pub fn parse(s: &str) -> Option<SubtitleMode> {
        Some(match s {
            "default" => SubtitleMode::Default,
            "audiogram" => SubtitleMode::Audiogram,
            _ => return None,
        })
    }
}

/// Every grapheme of `chars` is replaced by `replacement` in cue lines.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ForbiddenRule {
    /// The characters to replace; at least one.
    pub chars: String,
    /// What each of them becomes; may be empty.
    pub replacement: String,
}

/// Resolved settings, every field set. `Default` is the contract's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `auto`, `multilingual` or a language code. Default `auto`.
    pub language: String,
    /// Terms whose spelling recognised words are rewritten to. Default none.
    pub custom_vocabulary: Vec<String>,
    /// Smart formatting (true) or greedy fill (false). Default true.
    pub format_subtitles: bool,
    /// Hard limit of graphemes per line, 10 to 250. Default 42.
    pub max_chars_per_line: u32,
    /// Hard limit of lines per cue, 1 to 5. Default 2.
    pub max_lines_per_subtitle: u32,
    /// Shortest cue, 0 to 60 s. Default none.
    pub min_duration: Option<Millis>,
    /// Longest cue, 0.1 to 60 s. Default none.
    pub max_duration: Option<Millis>,
    /// Frames kept free between consecutive cues, 0 to 100. Default 3.
    pub min_frames_between_subtitles: u32,
    /// Reading pace. Default balanced.
    pub content_profile: ContentProfile,
    /// Default or audiogram. Default default.
    pub subtitle_mode: SubtitleMode,
    /// Sentence-ending punctuation always ends the cue. Default false.
    pub split_on_punctuation: bool,
    /// Two speakers may share a cue, each line starting with an em dash. Default true.
    pub em_dash_on_speaker_change: bool,
    /// A sentence running over a cue boundary gets `...` on both sides. Default false.
    pub ellipsis_continuation: bool,
    /// Moves every cue, -10000 to 10000 ms. Default 0.
    pub shift_ms: i32,
    /// Character replacements applied to cue lines. Default none.
    pub forbidden_characters: Vec<ForbiddenRule>,
    /// Context for a formatting plug-in; the built-in formatter does not read it. Default none.
    pub prompt: Option<String>,
    /// Extract highlights after layout. Default false.
    pub create_highlights: bool,
    /// Extract chapters after layout. Default false.
    pub create_chapters: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            language: "auto".to_string(),
            custom_vocabulary: Vec::new(),
            format_subtitles: true,
            max_chars_per_line: 42,
            max_lines_per_subtitle: 2,
            min_duration: None,
            max_duration: None,
            min_frames_between_subtitles: 3,
            content_profile: ContentProfile::Balanced,
            subtitle_mode: SubtitleMode::Default,
            split_on_punctuation: false,
            em_dash_on_speaker_change: true,
            ellipsis_continuation: false,
            shift_ms: 0,
            forbidden_characters: Vec::new(),
            prompt: None,
            create_highlights: false,
            create_chapters: false,
        }
    }
}

/// Settings as a preset or a request carries them: `None` means "not set here".
#[derive(Debug, Clone, PartialEq, Default)]
#[allow(missing_docs)] // Each field is the `Settings` field of the same name.
pub struct PartialSettings {
    pub language: Option<String>,
    pub custom_vocabulary: Option<Vec<String>>,
    pub format_subtitles: Option<bool>,
    pub max_chars_per_line: Option<u32>,
    pub max_lines_per_subtitle: Option<u32>,
    pub min_duration: Option<Millis>,
    pub max_duration: Option<Millis>,
    pub min_frames_between_subtitles: Option<u32>,
    pub content_profile: Option<ContentProfile>,
    pub subtitle_mode: Option<SubtitleMode>,
    pub split_on_punctuation: Option<bool>,
    pub em_dash_on_speaker_change: Option<bool>,
    pub ellipsis_continuation: Option<bool>,
    pub shift_ms: Option<i32>,
    pub forbidden_characters: Option<Vec<ForbiddenRule>>,
    pub prompt: Option<String>,
    pub create_highlights: Option<bool>,
    pub create_chapters: Option<bool>,
}

impl PartialSettings {
    /// `self` layered over `lower`, field by field: a field `self` leaves unset keeps `lower`'s.
    pub fn over(&self, lower: &PartialSettings) -> PartialSettings {
        macro_rules! pick {
            ($($f:ident),*) => { PartialSettings { $($f: self.$f.clone().or_else(|| lower.$f.clone())),* } };
        }
        pick!(
            language,
            custom_vocabulary,
            format_subtitles,
            max_chars_per_line,
            max_lines_per_subtitle,
            min_duration,
            max_duration,
            min_frames_between_subtitles,
            content_profile,
            subtitle_mode,
            split_on_punctuation,
            em_dash_on_speaker_change,
            ellipsis_continuation,
            shift_ms,
            forbidden_characters,
            prompt,
            create_highlights,
            create_chapters
        )
    }

    /// The effective settings: these layered over the defaults.
    pub fn resolve(&self) -> Settings {
        let d = Settings::default();
        Settings {
            language: self.language.clone().unwrap_or(d.language),
            custom_vocabulary: self
                .custom_vocabulary
                .clone()
                .unwrap_or(d.custom_vocabulary),
            format_subtitles: self.format_subtitles.unwrap_or(d.format_subtitles),
            max_chars_per_line: self.max_chars_per_line.unwrap_or(d.max_chars_per_line),
            max_lines_per_subtitle: self
                .max_lines_per_subtitle
                .unwrap_or(d.max_lines_per_subtitle),
            min_duration: self.min_duration.or(d.min_duration),
            max_duration: self.max_duration.or(d.max_duration),
            min_frames_between_subtitles: self
                .min_frames_between_subtitles
                .unwrap_or(d.min_frames_between_subtitles),
            content_profile: self.content_profile.unwrap_or(d.content_profile),
            subtitle_mode: self.subtitle_mode.unwrap_or(d.subtitle_mode),
            split_on_punctuation: self.split_on_punctuation.unwrap_or(d.split_on_punctuation),
            em_dash_on_speaker_change: self
                .em_dash_on_speaker_change
                .unwrap_or(d.em_dash_on_speaker_change),
            ellipsis_continuation: self
                .ellipsis_continuation
                .unwrap_or(d.ellipsis_continuation),
            shift_ms: self.shift_ms.unwrap_or(d.shift_ms),
            forbidden_characters: self
                .forbidden_characters
                .clone()
                .unwrap_or(d.forbidden_characters),
            prompt: self.prompt.clone().or(d.prompt),
            create_highlights: self.create_highlights.unwrap_or(d.create_highlights),
            create_chapters: self.create_chapters.unwrap_or(d.create_chapters),
        }
    }

    /// Problems that only show once layers are combined (minDuration > maxDuration), with paths
    /// under `prefix` (`"settings"` for the API).
    pub fn check_combined(&self, prefix: &str) -> Vec<FieldError> {
        match (self.min_duration, self.max_duration) {
            (Some(min), Some(max)) if min > max => vec![FieldError::new(
                join(prefix, "minDuration"),
                "cannot exceed maxDuration",
            )],
            _ => Vec::new(),
        }
    }
}

/// One validation problem: where (`settings.maxCharsPerLine`) and what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// Path of the field in the request, dot-separated, arrays indexed: `settings.forbiddenCharacters[3].chars`.
    pub field: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl FieldError {
    /// A problem at `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The settings keys the contract knows, in its table's order.
pub const SETTING_KEYS: [&str; 18] = [
    "language",
    "customVocabulary",
    "formatSubtitles",
    "maxCharsPerLine",
    "maxLinesPerSubtitle",
    "minDuration",
    "maxDuration",
    "minFramesBetweenSubtitles",
    "contentProfile",
    "subtitleMode",
    "splitOnPunctuation",
    "emDashOnSpeakerChange",
    "ellipsisContinuation",
    "shiftMs",
    "forbiddenCharacters",
    "prompt",
    "createHighlights",
    "createChapters",
];

/// Whether `code` looks like a language code (`en`, `zh-TW`, `pt-BR`, `yue`), or `auto`/`multilingual`.
pub fn is_language_tag(code: &str) -> bool {
    if code == "auto" || code == "multilingual" {
        return true;
    }
    let mut parts = code.split('-');
    let Some(primary) = parts.next() else {
        return false;
    };
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_lowercase())
        && parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(feature = "json")]
mod json {
    use super::*;
    use serde_json::{Map, Value};

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    impl PartialSettings {
        /// Reads and validates a settings object. Every problem is reported at once, each with its
        /// path under `prefix` (`"settings"` for the API, `""` for a bare settings file).
        pub fn from_json(value: &Value, prefix: &str) -> Result<PartialSettings, Vec<FieldError>> {
            let mut errs = Vec::new();
            let Some(obj) = value.as_object() else {
                let at = if prefix.is_empty() {
                    "settings"
                } else {
                    prefix
                };
                return Err(vec![FieldError::new(at, "must be an object")]);
            };
            let mut out = PartialSettings::default();
            for (key, v) in obj {
                let path = join(prefix, key);
                let mut err = |m: &str| errs.push(FieldError::new(path.clone(), m));
                match key.as_str() {
                    "language" => match v.as_str() {
                        Some(s) if is_language_tag(s) => out.language = Some(s.to_string()),
                        Some(_) => {
                            err("must be auto, multilingual or a language code such as en or zh-TW")
                        }
                        None => err("must be a string"),
                    },
                    "customVocabulary" => match v.as_array() {
                        Some(items) => {
                            if items.len() > 1000 {
                                err("must have at most 1000 items");
                            }
                            let mut terms = Vec::new();
                            for (i, item) in items.iter().enumerate() {
                                let p = format!("{path}[{i}]");
                                match item.as_str() {
                                    Some(s) if chars(s) > 100 => errs
                                        .push(FieldError::new(p, "must be at most 100 characters")),
                                    Some(s) => terms.push(s.to_string()),
                                    None => errs.push(FieldError::new(p, "must be a string")),
                                }
                            }
                            out.custom_vocabulary = Some(terms);
                        }
                        None => err("must be an array of strings"),
                    },
                    "formatSubtitles" => out.format_subtitles = boolean(v, &mut err),
                    "splitOnPunctuation" => out.split_on_punctuation = boolean(v, &mut err),
                    "emDashOnSpeakerChange" => out.em_dash_on_speaker_change = boolean(v, &mut err),
                    "ellipsisContinuation" => out.ellipsis_continuation = boolean(v, &mut err),
                    "createHighlights" => out.create_highlights = boolean(v, &mut err),
                    "createChapters" => out.create_chapters = boolean(v, &mut err),
                    "maxCharsPerLine" => {
                        out.max_chars_per_line = integer(v, 10, 250, &mut err).map(|n| n as u32)
                    }
                    "maxLinesPerSubtitle" => {
                        out.max_lines_per_subtitle = integer(v, 1, 5, &mut err).map(|n| n as u32)
                    }
                    "minFramesBetweenSubtitles" => {
                        out.min_frames_between_subtitles =
                            integer(v, 0, 100, &mut err).map(|n| n as u32)
                    }
                    "shiftMs" => {
                        out.shift_ms = integer(v, -10_000, 10_000, &mut err).map(|n| n as i32)
                    }
                    "minDuration" => out.min_duration = seconds(v, 0.0, 60.0, &mut err),
                    "maxDuration" => out.max_duration = seconds(v, 0.1, 60.0, &mut err),
                    "contentProfile" => match v.as_str().map(ContentProfile::parse) {
                        Some(Some(p)) => out.content_profile = Some(p),
                        _ => err("must be one of balanced, dramatic, dense, auto"),
                    },
                    "subtitleMode" => match v.as_str().map(SubtitleMode::parse) {
                        Some(Some(m)) => out.subtitle_mode = Some(m),
                        _ => err("must be one of default, audiogram"),
                    },
                    "prompt" => match v.as_str() {
                        Some(s) if chars(s) > 4000 => err("must be at most 4000 characters"),
                        Some(s) => out.prompt = Some(s.to_string()),
                        None => err("must be a string"),
                    },
                    "forbiddenCharacters" => {
                        out.forbidden_characters = forbidden(v, &path, &mut errs);
                    }
                    _ => err("unknown field"),
                }
            }
            errs.extend(out.check_combined(prefix));
            if errs.is_empty() {
                Ok(out)
            } else {
                Err(errs)
            }
        }

        /// The settings that are set, as a JSON object with the contract's names. Reading it back
        /// with [`PartialSettings::from_json`] gives the same value.
        pub fn to_json(&self) -> Value {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            };
            let ms = |t: Millis| Value::from(t.as_secs_f64());
            put("language", self.language.clone().map(Value::from));
            put(
                "customVocabulary",
                self.custom_vocabulary.clone().map(Value::from),
            );
            put("formatSubtitles", self.format_subtitles.map(Value::from));
            put("maxCharsPerLine", self.max_chars_per_line.map(Value::from));
            put(
                "maxLinesPerSubtitle",
                self.max_lines_per_subtitle.map(Value::from),
            );
            put("minDuration", self.min_duration.map(ms));
            put("maxDuration", self.max_duration.map(ms));
            put(
                "minFramesBetweenSubtitles",
                self.min_frames_between_subtitles.map(Value::from),
            );
            put(
                "contentProfile",
                self.content_profile.map(|p| Value::from(p.as_str())),
            );
            put(
                "subtitleMode",
                self.subtitle_mode.map(|p| Value::from(p.as_str())),
            );
            put(
                "splitOnPunctuation",
                self.split_on_punctuation.map(Value::from),
            );
            put(
                "emDashOnSpeakerChange",
                self.em_dash_on_speaker_change.map(Value::from),
            );
            put(
                "ellipsisContinuation",
                self.ellipsis_continuation.map(Value::from),
            );
            put("shiftMs", self.shift_ms.map(Value::from));
            put(
                "forbiddenCharacters",
                self.forbidden_characters.as_ref().map(|rules| {
                    Value::Array(
                        rules
                            .iter()
                            .map(|r| {
                                serde_json::json!({"chars": r.chars, "replacement": r.replacement})
                            })
                            .collect(),
                    )
                }),
            );
            put("prompt", self.prompt.clone().map(Value::from));
            put("createHighlights", self.create_highlights.map(Value::from));
            put("createChapters", self.create_chapters.map(Value::from));
            Value::Object(m)
        }
    }

    fn boolean(v: &Value, err: &mut impl FnMut(&str)) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            err("must be a boolean");
        }
        b
    }

    fn integer(v: &Value, min: i64, max: i64, err: &mut impl FnMut(&str)) -> Option<i64> {
        // 42.0 is accepted as 42: JSON does not tell integers from floats, and clients differ.
        let n = v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        });
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(_) => {
                err(&format!("must be between {min} and {max}"));
                None
            }
            None => {
                err("must be an integer");
                None
            }
        }
    }

    fn seconds(v: &Value, min: f64, max: f64, err: &mut impl FnMut(&str)) -> Option<Millis> {
        match v.as_f64() {
            Some(s) if (min..=max).contains(&s) => Millis::from_secs_f64(s),
            Some(_) => {
                err(&format!("must be between {min} and {max} seconds"));
                None
            }
            None => {
                err("must be a number of seconds");
                None
            }
        }
    }

    fn forbidden(v: &Value, path: &str, errs: &mut Vec<FieldError>) -> Option<Vec<ForbiddenRule>> {
        let Some(items) = v.as_array() else {
            errs.push(FieldError::new(
                path,
                "must be an array of {chars, replacement} objects",
            ));
            return None;
        };
        if items.len() > 100 {
            errs.push(FieldError::new(path, "must have at most 100 rules"));
        }
        let mut rules = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let Some(obj) = item.as_object() else {
                errs.push(FieldError::new(
                    at,
                    "must be an object with chars and replacement",
                ));
                continue;
            };
            let mut rule = ForbiddenRule {
                chars: String::new(),
                replacement: String::new(),
            };
            let mut ok = true;
            match obj.get("chars") {
                Some(Value::String(s)) if !s.is_empty() => rule.chars = s.clone(),
                Some(Value::String(_)) => {
                    errs.push(FieldError::new(format!("{at}.chars"), "must not be empty"));
                    ok = false;
                }
                Some(_) => {
                    errs.push(FieldError::new(format!("{at}.chars"), "must be a string"));
                    ok = false;
                }
                None => {
                    errs.push(FieldError::new(format!("{at}.chars"), "is required"));
                    ok = false;
                }
            }
            match obj.get("replacement") {
                Some(Value::String(s)) => rule.replacement = s.clone(),
                Some(_) => {
                    errs.push(FieldError::new(
                        format!("{at}.replacement"),
                        "must be a string",
                    ));
                    ok = false;
                }
                None => {
                    errs.push(FieldError::new(format!("{at}.replacement"), "is required"));
                    ok = false;
                }
            }
            for key in obj.keys() {
                if key != "chars" && key != "replacement" {
                    errs.push(FieldError::new(format!("{at}.{key}"), "unknown field"));
                    ok = false;
                }
            }
            if ok {
                rules.push(rule);
            }
        }
        Some(rules)
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: serde_json::Value, expected: &[(&str, &str)]) {
        let got = match PartialSettings::from_json(&value, "settings") {
            Ok(_) => Vec::new(),
            Err(errs) => errs,
        };
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn reports_every_problem_with_its_path() {
        check(
            json!({
                "maxCharsPerLine": 5,
                "maxLinesPerSubtitle": "two",
                "colour": "red",
                "forbiddenCharacters": [{"chars": "x", "replacement": "y"}, {"chars": "", "replacement": 1}],
            }),
            &[
                ("settings.colour", "unknown field"),
                ("settings.forbiddenCharacters[1].chars", "must not be empty"),
                (
                    "settings.forbiddenCharacters[1].replacement",
                    "must be a string",
                ),
                ("settings.maxCharsPerLine", "must be between 10 and 250"),
                ("settings.maxLinesPerSubtitle", "must be an integer"),
            ],
        );
    }

    #[test]
    fn min_duration_above_max_duration_is_refused() {
        check(
            json!({"minDuration": 5, "maxDuration": 2}),
            &[("settings.minDuration", "cannot exceed maxDuration")],
        );
        check(json!({"minDuration": 1.5, "maxDuration": 2}), &[]);
    }

    #[test]
    fn limits_match_the_contract() {
        check(
            json!({"maxCharsPerLine": 10, "maxLinesPerSubtitle": 5, "shiftMs": -10000}),
            &[],
        );
        check(
            json!({"maxDuration": 0.05}),
            &[("settings.maxDuration", "must be between 0.1 and 60 seconds")],
        );
        check(
            json!({"customVocabulary": ["x".repeat(101)]}),
            &[(
                "settings.customVocabulary[0]",
                "must be at most 100 characters",
            )],
        );
        check(
            json!({"language": "English"}),
            &[(
                "settings.language",
                "must be auto, multilingual or a language code such as en or zh-TW",
            )],
        );
        check(
            json!({"contentProfile": "fast"}),
            &[(
                "settings.contentProfile",
                "must be one of balanced, dramatic, dense, auto",
            )],
        );
    }

    #[test]
    fn layering_keeps_unset_fields_of_the_lower_layer() {
        let preset = PartialSettings::from_json(
            &json!({"maxCharsPerLine": 32, "contentProfile": "dense"}),
            "",
        )
        .unwrap();
        let request =
            PartialSettings::from_json(&json!({"maxCharsPerLine": 37}), "settings").unwrap();
        let s = request.over(&preset).resolve();
        assert_eq!(s.max_chars_per_line, 37);
        assert_eq!(s.content_profile, ContentProfile::Dense);
        assert_eq!(s.max_lines_per_subtitle, 2);
    }

    #[test]
    fn json_form_round_trips() {
        let v = json!({"maxCharsPerLine": 32, "minDuration": 1.2, "forbiddenCharacters": [{"chars": "#", "replacement": ""}]});
        let p = PartialSettings::from_json(&v, "").unwrap();
        assert_eq!(PartialSettings::from_json(&p.to_json(), "").unwrap(), p);
    }
}
