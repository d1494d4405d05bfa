//! Pure text functions beside the layout: custom vocabulary, the clean version, transcript text.
//!
//! These are the word- and cue-level rewrites that the host applies around [`crate::layout`]:
//!
//! - [`apply_vocabulary`] rewrites recognised words to the spelling of a customVocabulary term
//!   (once, in the pipeline, because it changes the stored words);
//! - [`clean_words`] derives the clean version (filler words removed, punctuation and capitals
//!   mended);
//! - [`transcript_text`] renders the plain-text transcript form with its `maxChars` cut;
//! - [`truncate_cues`] is the JSON form's `maxChars` rule (whole cues, at least one).
//!
//! Characters are counted as extended grapheme clusters, as everywhere in the engine.

use std::collections::HashMap;

use unicode_segmentation::UnicodeSegmentation;

use crate::{Cue, Word};

/// The longest run of consecutive words that can merge into one vocabulary term.
const MAX_RUN: usize = 4;

/// Characters that carry meaning inside names (`C++`, `C#`, `AT&T`, `@handle`) and so take part in
/// vocabulary matching; every other non-alphanumeric character is punctuation and is ignored.
fn is_name_symbol(c: char) -> bool {
    matches!(c, '+' | '#' | '&' | '@')
}

fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || is_name_symbol(c)
}

/// The matching key of a word or term: lowercased, punctuation and whitespace removed.
fn vocabulary_key(text: &str) -> String {
    text.chars()
        .filter(|&c| is_key_char(c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Splits `text` into (leading punctuation, core, trailing punctuation), where the core runs from
/// the first to the last character for which `keep` holds. A text without such a character is all
/// leading punctuation.
fn split_affixes(text: &str, keep: impl Fn(char) -> bool) -> (&str, &str, &str) {
    let Some(first) = text.char_indices().find(|&(_, c)| keep(c)).map(|(i, _)| i) else {
        return (text, "", "");
    };
    let last_end = text
        .char_indices()
        .rev()
        .find(|&(_, c)| keep(c))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(text.len());
    (&text[..first], &text[first..last_end], &text[last_end..])
}

/// Rewrites recognised words to the spelling of customVocabulary terms.
///
/// A word, or a run of up to 4 consecutive words, whose concatenation equals a term case- and
/// punctuation-insensitively is replaced by the term's spelling. A run becomes one word spanning
/// the run's start to its end, with the speaker of its first word and the manual break of its last;
/// the first word's leading and the last word's trailing punctuation are kept (`"open" "ai,"` with
/// the term `OpenAI` gives `OpenAI,`), except where the term already carries that punctuation.
///
/// Matching rules, chosen so that a rewrite is never surprising:
/// - punctuation and whitespace are ignored, but `+ # & @` count, so `C++` does not match a lone
///   `c` and `AT&T` does not match `att`;
/// - the longest run wins, scanning left to right; when several terms share a key, the first one
///   in `terms` wins;
/// - a run never spans a speaker change or a manual cue/line break, and never includes a word that
///   is punctuation only;
/// - a term made of punctuation only is ignored.
///
/// Runs in O(n * 4) with a hash map of the normalised terms. Deterministic.
pub fn apply_vocabulary(words: &[Word], terms: &[String]) -> Vec<Word> {
    let mut by_key: HashMap<String, &str> = HashMap::with_capacity(terms.len());
    let mut longest_key = 0usize;
    for term in terms {
        let key = vocabulary_key(term);
        if key.is_empty() {
            continue;
        }
        longest_key = longest_key.max(key.len());
        by_key.entry(key).or_insert(term.as_str());
    }
    if by_key.is_empty() {
        return words.to_vec();
    }
    let keys: Vec<String> = words.iter().map(|w| vocabulary_key(&w.text)).collect();

    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        // The candidate runs starting at `i`, shortest first; the longest match wins below.
        let mut run_key = String::new();
        let mut best: Option<(usize, &str)> = None;
        for len in 1..=MAX_RUN {
            let j = i + len - 1;
            let (Some(word), Some(key)) = (words.get(j), keys.get(j)) else {
                break;
            };
            if key.is_empty() || run_key.len() + key.len() > longest_key {
                break;
            }
            if len > 1 {
                let prev = &words[j - 1];
                if word.speaker != words[i].speaker || prev.break_after.is_some() {
                    break;
                }
            }
            run_key.push_str(key);
            if let Some(term) = by_key.get(&run_key) {
                best = Some((len, term));
            }
        }
        match best {
            Some((len, term)) => {
                let first = &words[i];
                let last = &words[i + len - 1];
                out.push(Word {
                    text: respell(&first.text, &last.text, term).into(),
                    start: first.start,
                    end: last.end.max(first.start),
                    speaker: first.speaker,
                    speaker_set: first.speaker_set,
                    break_after: last.break_after,
                });
                i += len;
            }
            None => {
                out.push(words[i].clone());
                i += 1;
            }
        }
    }
    out
}

/// The term's spelling with the leading punctuation of `first` and the trailing punctuation of
/// `last`, minus whatever punctuation the term itself already begins or ends with.
fn respell(first: &str, last: &str, term: &str) -> String {
    let (lead, _, _) = split_affixes(first, is_key_char);
    let (_, _, trail) = split_affixes(last, is_key_char);
    let (term_lead, _, term_trail) = split_affixes(term, is_key_char);
    let lead = lead.strip_suffix(term_lead).unwrap_or(lead);
    let trail = trail.strip_prefix(term_trail).unwrap_or(trail);
    let mut text = String::with_capacity(lead.len() + term.len() + trail.len());
    text.push_str(lead);
    text.push_str(term);
    text.push_str(trail);
    text
}

/// Fillers removed in every language: hesitation sounds that are no word anywhere we support.
const FILLERS_COMMON: &[&str] = &[
    "uh", "uhh", "uhm", "erm", "hm", "hmm", "mm", "ah", "ahh", "ahm",
];

/// Per-language fillers, by primary language subtag. `um` and `er` are only fillers where they
/// are no word: `um` is a German preposition and Portuguese for "one", `er` is Dutch and German.
fn language_fillers(language: &str) -> &'static [&'static str] {
    let primary = language
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    match primary.as_str() {
        "en" => &["um", "umm", "er", "err", "eh", "ehm"],
        "nl" => &["um", "umm", "eh", "ehh", "ehm", "euh"],
        "de" => &["äh", "ähh", "ähm", "öh", "öhm", "eh", "ehm"],
        "fr" => &["um", "umm", "euh", "euhh", "heu", "hum", "bah"],
        "es" => &["um", "umm", "eh", "ehh", "em", "emm", "ehm"],
        "it" => &["um", "umm", "eh", "ehm", "ehh", "mah"],
        "pt" => &["hum", "éh", "ahn", "hã", "eh", "ehm"],
        _ => &[],
    }
}

/// The filler key of a word: lowercased core, with runs of three or more equal characters
/// shortened to two, so `Ummm` and `hmmmm` match `umm` and `hmm`.
fn filler_key(core: &str) -> String {
    let mut key = String::with_capacity(core.len());
    let mut prev = None;
    let mut run = 0;
    for c in core.chars().flat_map(char::to_lowercase) {
        if Some(c) == prev {
            run += 1;
        } else {
            run = 1;
            prev = Some(c);
        }
        if run <= 2 {
            key.push(c);
        }
    }
    key
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '.' | '?' | '!' | '…' | '。' | '？' | '！')
}

fn is_clause_mark(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '、' | '，' | '；')
}

fn is_closing(c: char) -> bool {
    matches!(
        c,
        ')' | ']' | '}' | '"' | '\'' | '»' | '”' | '’' | '›' | '」' | '』'
    )
}

/// Whether a filler's trailing punctuation is a hesitation ellipsis (`uh...`, `um…`) rather than
/// the end of a sentence.
fn trails_off(trail: &str) -> bool {
    let trail = trail.trim_end_matches(is_closing);
    (trail.ends_with("..") || trail.ends_with('…')) && !trail.contains(['?', '!', '？', '！'])
}

/// Whether `text` ends a sentence: its last sentence-ending mark comes after its last letter.
fn ends_sentence(text: &str) -> bool {
    let (_, _, trail) = split_affixes(text, char::is_alphanumeric);
    trail.chars().any(is_sentence_end)
}

/// Removes trailing clause punctuation (`,` `;` `:`) from the word's text.
fn strip_trailing_clause_marks(text: &mut String) {
    while text.ends_with(is_clause_mark) {
        text.pop();
    }
    let trimmed = text.trim_end().len();
    text.truncate(trimmed);
}

/// Upper-cases the first letter of `text` (after any leading punctuation) when it is lower case
/// and its upper case is a single character.
pub(crate) fn capitalise_first_letter(text: &mut String) {
    let Some((i, c)) = text.char_indices().find(|&(_, c)| c.is_alphanumeric()) else {
        return;
    };
    if !c.is_lowercase() {
        return;
    }
    let mut upper = c.to_uppercase();
    if let (Some(u), None) = (upper.next(), upper.next()) {
        text.replace_range(i..i + c.len_utf8(), u.encode_utf8(&mut [0u8; 4]));
    }
}

/// The clean version of a transcript: filler words removed, punctuation and capitals mended.
///
/// Fillers are the hesitation sounds `uh`, `erm`, `hmm`, `mm`, `ah` (and their drawn-out forms
/// such as `Ummm`) in every language, plus a short list per language (`language` is a code such as
/// `en`, `nl`, `de-AT`; its primary subtag is used). `um` and `er` are fillers in English but not in
/// German or Dutch, where they are words, so they are removed only for languages that list them.
///
/// Mending around each removal:
/// - a filler that opened a capitalised sentence passes its capital on: `Um, so we` -> `So we`
///   (a transcript without capitals, as pocketsphinx gives, stays without them);
/// - the commas that bracketed a filler go with it: `we, uh, went` -> `we went`;
/// - a filler that carried the sentence end hands it to the previous word: `we went, um.` ->
///   `we went.` (a trailing ellipsis, `uh...`, is hesitation, not a sentence end: it goes too);
/// - a filler left dangling at the very end takes the comma before it along: `and then, uh` ->
///   `and then`;
/// - an opening mark before a filler (`¿Eh, vienes?`) moves to the next word (`¿Vienes?`);
/// - a manual break pinned after a filler moves to the previous word.
///
/// Word timings of the kept words are unchanged.
pub fn clean_words(words: &[Word], language: &str) -> Vec<Word> {
    let extra = language_fillers(language);
    let is_filler = |key: &str| FILLERS_COMMON.contains(&key) || extra.contains(&key);

    let mut out: Vec<Word> = Vec::with_capacity(words.len());
    // Mending owed to the next kept word.
    let mut capitalise_next = false;
    let mut lead_for_next = String::new();
    // Whether the last thing seen was a removed filler (to mend a dangling end).
    let mut removed_since_last_kept = false;
    let mut comma_owed_to_removal = false;

    for word in words {
        let (lead, core, trail) = split_affixes(&word.text, char::is_alphanumeric);
        if core.is_empty() || !is_filler(&filler_key(core)) {
            let mut kept = word.clone();
            if !lead_for_next.is_empty() {
                kept.edit_text(|t| t.insert_str(0, &lead_for_next));
                lead_for_next.clear();
            }
            if capitalise_next {
                kept.edit_text(capitalise_first_letter);
                capitalise_next = false;
            }
            removed_since_last_kept = false;
            comma_owed_to_removal = false;
            out.push(kept);
            continue;
        }

        removed_since_last_kept = true;
        let at_sentence_start = out.last().is_none_or(|w| ends_sentence(&w.text));
        let trail_closes = trail.chars().any(is_closing);
        if !lead.is_empty() && !trail_closes {
            lead_for_next.push_str(lead);
        }
        if let (Some(b), Some(prev)) = (word.break_after, out.last_mut()) {
            prev.break_after.get_or_insert(b);
        }

        let trails_off = trails_off(trail);
        if trail.chars().any(is_sentence_end) && !trails_off {
            // The filler ended the sentence: the previous word ends it now.
            if let Some(prev) = out.last_mut().filter(|w| !ends_sentence(&w.text)) {
                let end = trail.trim_start_matches(is_clause_mark);
                prev.edit_text(|t| {
                    strip_trailing_clause_marks(t);
                    t.push_str(end);
                });
            }
            capitalise_next = false;
            comma_owed_to_removal = false;
            continue;
        }

        let starts_capitalised = core.chars().next().is_some_and(char::is_uppercase);
        if at_sentence_start {
            capitalise_next |= starts_capitalised;
        } else if trail.chars().any(is_clause_mark) || trails_off {
            // `we, uh, went` and `we, uh... went`: the marks bracketed the filler.
            if let Some(prev) = out.last_mut() {
                prev.edit_text(strip_trailing_clause_marks);
            }
        } else if out.last().is_some_and(|w| w.text.ends_with(is_clause_mark)) {
            comma_owed_to_removal = true;
        }
    }

    if removed_since_last_kept {
        // Fillers ended the transcript: a comma left before them now dangles.
        if let Some(prev) = out.last_mut() {
            if comma_owed_to_removal || prev.text.ends_with(is_clause_mark) {
                prev.edit_text(strip_trailing_clause_marks);
            }
        }
    }
    out
}

/// The speaker of the last word of `cue` that shows anything; `cue.speaker` for a cue without
/// such words (one read from a file).
fn last_speaker(cue: &Cue) -> u32 {
    cue.words
        .iter()
        .rev()
        .find(|w| {
            w.text
                .chars()
                .any(|c| !c.is_whitespace() && !c.is_control())
        })
        .map_or(cue.speaker, |w| w.speaker)
}

/// Renders the plain-text transcript form and applies `max_chars`.
///
/// One cue per line (the cue's lines joined by one space), a blank line where the speaker changes,
/// `\n` line ends and a final newline; no cues give the empty string. The speaker changes between
/// the last word shown of one cue and the first of the next (`cue.speaker`); a change inside a
/// dashed two-speaker cue is shown by its dashes, the cue staying one line.
///
/// `max_chars` counts grapheme clusters (as every character count of the engine does) of the text
/// *before the final newline*; the line ends and blank lines inside it count as one character
/// each. When the text is longer, it is cut at the last word boundary (a space or line end) at or
/// before `max_chars` characters, trailing blanks removed, and still ends with a newline; when the
/// first word alone is longer than `max_chars`, the cut is hard at `max_chars` characters. The
/// flag says whether anything was cut. So a truncated body holds at most `max_chars + 1`
/// characters, and a body that fits apart from its final newline is not truncated.
pub fn transcript_text(cues: &[Cue], max_chars: Option<usize>) -> (String, bool) {
    let mut text = String::new();
    let mut prev_speaker = None;
    for cue in cues {
        if prev_speaker.is_some_and(|s| s != cue.speaker) {
            text.push('\n');
        }
        // The speaker who talks last in the cue: in a dashed two-speaker cue the second line's,
        // so the blank line falls where the speaker changes, not one cue late.
        prev_speaker = Some(last_speaker(cue));
        let mut first = true;
        for line in &cue.lines {
            if !first {
                text.push(' ');
            }
            first = false;
            text.push_str(line);
        }
        text.push('\n');
    }
    let Some(max) = max_chars else {
        return (text, false);
    };
    let body = text.strip_suffix('\n').unwrap_or(&text);

    // Walk at most max + 1 graphemes: the cut never needs to look further.
    let mut last_boundary = None;
    let mut hard_cut = body.len();
    let mut fits = true;
    for (count, (offset, g)) in body.grapheme_indices(true).enumerate() {
        if count == max {
            hard_cut = offset;
            fits = false;
            if is_blank(g) {
                last_boundary = Some(offset);
            }
            break;
        }
        if is_blank(g) {
            last_boundary = Some(offset);
        }
    }
    if fits {
        return (text, false);
    }
    let cut = match last_boundary {
        Some(b) if !body[..b].trim_end().is_empty() => body[..b].trim_end(),
        _ => &body[..hard_cut],
    };
    let mut out = String::with_capacity(cut.len() + 1);
    out.push_str(cut);
    if !out.is_empty() {
        out.push('\n');
    }
    (out, true)
}

fn is_blank(grapheme: &str) -> bool {
    grapheme.chars().next().is_some_and(char::is_whitespace)
}

/// The JSON form's `maxChars` rule: how many whole cues to keep, and whether any were left out.
///
/// Cues are kept while the running total of their text's grapheme clusters (each cue's lines
/// joined by one space; nothing counted between cues) stays at or below `max_chars`, and at least
/// one cue is always kept when there is one. Without `max_chars` every cue is kept.
pub fn truncate_cues(cues: &[Cue], max_chars: Option<usize>) -> (usize, bool) {
    let Some(max) = max_chars else {
        return (cues.len(), false);
    };
    let mut total = 0usize;
    let mut kept = 0usize;
    for cue in cues {
        let chars = cue_chars(cue);
        total = total.saturating_add(chars);
        if total > max && kept > 0 {
            break;
        }
        kept += 1;
        if total > max {
            break;
        }
    }
    (kept, kept < cues.len())
}

/// Graphemes of the cue's lines joined by one space.
fn cue_chars(cue: &Cue) -> usize {
    let graphemes: usize = cue.lines.iter().map(|l| l.graphemes(true).count()).sum();
    graphemes + cue.lines.len().saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Break, Millis};

    fn words(texts: &[&str]) -> Vec<Word> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| Word::new(*t, Millis(i as i64 * 500), Millis(i as i64 * 500 + 400), 0))
            .collect()
    }

    fn texts(words: &[Word]) -> Vec<&str> {
        words.iter().map(|w| w.text.as_ref()).collect()
    }

    fn joined(words: &[Word]) -> String {
        texts(words).join(" ")
    }

    fn terms(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn cue(speaker: u32, lines: &[&str]) -> Cue {
        Cue {
            index: 1,
            start: Millis(0),
            end: Millis(1000),
            speaker,
            lines: lines.iter().map(|s| s.to_string()).collect(),
            words: Vec::new(),
        }
    }

    // --- customVocabulary ---

    #[test]
    fn vocabulary_merges_a_run_into_one_word_with_trailing_punctuation() {
        let input = words(&["we", "use", "open", "ai,", "daily"]);
        let out = apply_vocabulary(&input, &terms(&["OpenAI"]));
        assert_eq!(texts(&out), ["we", "use", "OpenAI,", "daily"]);
        let merged = &out[2];
        assert_eq!((merged.start, merged.end), (input[2].start, input[3].end));
    }

    #[test]
    fn vocabulary_respells_single_words_case_and_punctuation_insensitively() {
        let input = words(&["I", "love", "postgresql.", "And", "Post-GreSQL!"]);
        let out = apply_vocabulary(&input, &terms(&["PostgreSQL"]));
        assert_eq!(joined(&out), "I love PostgreSQL. And PostgreSQL!");
    }

    #[test]
    fn vocabulary_prefers_the_longest_run() {
        let input = words(&["new", "york", "city", "marathon"]);
        let out = apply_vocabulary(&input, &terms(&["New York", "New York City"]));
        assert_eq!(texts(&out), ["New York City", "marathon"]);
        assert_eq!(out[0].end, input[2].end);
    }

    #[test]
    fn vocabulary_runs_are_at_most_four_words() {
        let input = words(&["a", "b", "c", "d", "e"]);
        assert_eq!(
            texts(&apply_vocabulary(&input, &terms(&["ABCDE"]))).len(),
            5
        );
        let out = apply_vocabulary(&input, &terms(&["ABCD"]));
        assert_eq!(texts(&out), ["ABCD", "e"]);
    }

    #[test]
    fn vocabulary_keeps_name_symbols_significant() {
        let input = words(&["vitamin", "c", "and", "c++,", "c", "#"]);
        let out = apply_vocabulary(&input, &terms(&["C++", "C#"]));
        assert_eq!(joined(&out), "vitamin c and C++, C#");
    }

    #[test]
    fn vocabulary_keeps_leading_quotes_and_the_terms_own_punctuation() {
        let input = words(&["\"node", "js.\"", "Yahoo!"]);
        let out = apply_vocabulary(&input, &terms(&["Node.js", "Yahoo!"]));
        assert_eq!(joined(&out), "\"Node.js.\" Yahoo!");
    }

    #[test]
    fn vocabulary_never_merges_across_speakers_or_manual_breaks() {
        let mut input = words(&["open", "ai", "open", "ai"]);
        input[1].speaker = 1;
        input[2].break_after = Some(Break::Cue);
        let out = apply_vocabulary(&input, &terms(&["OpenAI"]));
        assert_eq!(texts(&out), ["open", "ai", "open", "ai"]);
    }

    #[test]
    fn vocabulary_first_term_wins_on_equal_keys_and_empty_terms_are_ignored() {
        let input = words(&["iphone", "...", "x"]);
        let out = apply_vocabulary(&input, &terms(&["...", "iPhone", "IPHONE"]));
        assert_eq!(texts(&out), ["iPhone", "...", "x"]);
        assert_eq!(apply_vocabulary(&[], &terms(&["x"])), Vec::<Word>::new());
    }

    // --- clean version ---

    fn clean(text: &str, language: &str) -> String {
        let input: Vec<&str> = text.split(' ').collect();
        joined(&clean_words(&words(&input), language))
    }

    #[test]
    fn clean_version_drops_um_and_recapitalises() {
        assert_eq!(clean("Um, so we went home.", "en"), "So we went home.");
        assert_eq!(
            clean("It rained. Uh, we stayed.", "en"),
            "It rained. We stayed."
        );
    }

    #[test]
    fn clean_version_removes_the_commas_around_a_filler() {
        assert_eq!(clean("we, uh, went there", "en"), "we went there");
        assert_eq!(clean("we uh went there", "en"), "we went there");
    }

    #[test]
    fn clean_version_hands_the_sentence_end_to_the_previous_word() {
        assert_eq!(clean("We went, um. Then", "en"), "We went. Then");
        assert_eq!(clean("Really, uh?", "en"), "Really?");
        assert_eq!(clean("Done. Um.", "en"), "Done.");
    }

    #[test]
    fn clean_version_treats_a_trailing_ellipsis_as_hesitation_not_a_sentence_end() {
        assert_eq!(
            clean("we went, uh... to the shop", "en"),
            "we went to the shop"
        );
        assert_eq!(clean("Uh… we went.", "en"), "We went.");
        assert_eq!(clean("and then, um...", "en"), "and then");
    }

    #[test]
    fn clean_version_mends_a_dangling_comma_at_the_end() {
        assert_eq!(clean("and then, uh", "en"), "and then");
    }

    #[test]
    fn clean_version_removes_drawn_out_fillers_and_runs_of_them() {
        assert_eq!(clean("Ummm, hmmm, uh, yes.", "en"), "Yes.");
    }

    #[test]
    fn clean_version_keeps_fillers_that_are_words_in_the_language() {
        assert_eq!(
            clean("er is, eh, om vijf uur iets", "nl"),
            "er is om vijf uur iets"
        );
        assert_eq!(
            clean("er kommt um fünf, äh, Uhr", "de"),
            "er kommt um fünf Uhr"
        );
        assert_eq!(clean("Euh, on y va.", "fr"), "On y va.");
        assert_eq!(clean("¿Eh, vienes?", "es-MX"), "¿Vienes?");
    }

    #[test]
    fn clean_version_leaves_lowercase_transcripts_lowercase() {
        assert_eq!(clean("um so we went", "en"), "so we went");
    }

    #[test]
    fn clean_version_keeps_timings_and_moves_breaks() {
        let mut input = words(&["one", "uh", "two"]);
        input[1].break_after = Some(Break::Cue);
        let out = clean_words(&input, "en");
        assert_eq!(texts(&out), ["one", "two"]);
        assert_eq!(out[0].break_after, Some(Break::Cue));
        assert_eq!((out[1].start, out[1].end), (input[2].start, input[2].end));
        assert!(clean_words(&words(&["uh", "um"]), "en").is_empty());
    }

    // --- transcript text ---

    #[test]
    fn transcript_text_puts_one_cue_per_line_and_a_blank_line_at_speaker_changes() {
        let cues = [
            cue(0, &["Hello there,", "my friend."]),
            cue(0, &["How are you?"]),
            cue(1, &["Fine."]),
        ];
        let (text, truncated) = transcript_text(&cues, None);
        assert_eq!(text, "Hello there, my friend.\nHow are you?\n\nFine.\n");
        assert!(!truncated);
        assert_eq!(transcript_text(&[], Some(5)), (String::new(), false));
    }

    #[test]
    fn transcript_text_breaks_where_the_speaker_changes_around_a_dashed_cue() {
        // Speaker 0, then a dashed cue 0 -> 1, then speaker 1 goes on, then speaker 0.
        let w = |text: &str, speaker| Word::new(text, Millis(0), Millis(1), speaker);
        let with_words = |lines: &[&str], words: Vec<Word>| Cue {
            speaker: words[0].speaker,
            words,
            ..cue(0, lines)
        };
        let cues = [
            with_words(&["We took the train."], vec![w("We", 0), w("train.", 0)]),
            with_words(&["—Late?", "—Very."], vec![w("Late?", 0), w("Very.", 1)]),
            with_words(&["Two hours."], vec![w("Two", 1), w("hours.", 1)]),
            with_words(&["Oh."], vec![w("Oh.", 0), w(" ", 1)]),
            with_words(&["Yes."], vec![w("Yes.", 0)]),
        ];
        let (text, _) = transcript_text(&cues, None);
        // No blank line before the dashed cue (its first speaker goes on), none after it (its
        // second speaker goes on), one where speaker 1 hands back to 0; an invisible word of
        // another speaker at a cue's end changes nothing.
        assert_eq!(
            text,
            "We took the train.\n—Late? —Very.\nTwo hours.\n\nOh.\nYes.\n"
        );
    }

    #[test]
    fn transcript_text_cuts_at_the_last_word_boundary_within_max_chars() {
        let cues = [cue(0, &["Hello there, my friend."])];
        // "Hello there, my" is 15 characters; "friend" would cross 18.
        assert_eq!(
            transcript_text(&cues, Some(18)),
            ("Hello there, my\n".to_string(), true)
        );
        // A boundary exactly at max_chars counts.
        assert_eq!(
            transcript_text(&cues, Some(15)),
            ("Hello there, my\n".to_string(), true)
        );
    }

    #[test]
    fn transcript_text_final_newline_does_not_count_toward_max_chars() {
        let cues = [cue(0, &["Hello."])];
        assert_eq!(
            transcript_text(&cues, Some(6)),
            ("Hello.\n".to_string(), false)
        );
        assert_eq!(
            transcript_text(&cues, Some(5)),
            ("Hello\n".to_string(), true)
        );
    }

    #[test]
    fn transcript_text_cuts_hard_when_the_first_word_is_longer() {
        let cues = [cue(0, &["Supercalifragilistic word"])];
        assert_eq!(
            transcript_text(&cues, Some(5)),
            ("Super\n".to_string(), true)
        );
    }

    #[test]
    fn transcript_text_counts_graphemes_and_drops_trailing_blank_lines_at_the_cut() {
        let cues = [cue(0, &["e\u{301}te\u{301} 👩‍👩‍👧"]), cue(1, &["Next"])];
        // "été 👩‍👩‍👧" is 5 graphemes; then "\n\n" and "Next".
        let (text, truncated) = transcript_text(&cues, Some(7));
        assert_eq!(text, "e\u{301}te\u{301} 👩‍👩‍👧\n");
        assert!(truncated);
        let (full, truncated) = transcript_text(&cues, Some(11));
        assert_eq!(full, "e\u{301}te\u{301} 👩‍👩‍👧\n\nNext\n");
        assert!(!truncated);
    }

    // --- JSON truncation ---

    #[test]
    fn json_truncation_keeps_whole_cues_within_max_chars() {
        let cues = [cue(0, &["abc", "de"]), cue(0, &["fgh"]), cue(0, &["ij"])];
        // Cue texts: "abc de" (6), "fgh" (3), "ij" (2).
        assert_eq!(truncate_cues(&cues, None), (3, false));
        assert_eq!(truncate_cues(&cues, Some(11)), (3, false));
        assert_eq!(truncate_cues(&cues, Some(10)), (2, true));
        assert_eq!(truncate_cues(&cues, Some(9)), (2, true));
        assert_eq!(truncate_cues(&cues, Some(8)), (1, true));
    }

    #[test]
    fn json_truncation_keeps_at_least_one_cue() {
        let cues = [cue(0, &["a long first cue"]), cue(0, &["b"])];
        assert_eq!(truncate_cues(&cues, Some(1)), (1, true));
        assert_eq!(truncate_cues(&[], Some(1)), (0, false));
    }

    proptest::proptest! {
        #[test]
        fn text_functions_never_panic_and_lose_no_plain_words(
            raw in proptest::collection::vec("[a-zA-Z+#.,?¿!\"' -]{0,8}|um,?|Uh\\.|\u{301}|👩‍👩‍👧", 0..24),
            vocab in proptest::collection::vec("[a-zA-Z+#. ]{0,10}", 0..6),
            max in proptest::option::of(0usize..40),
        ) {
            let input = words(&raw.iter().map(String::as_str).collect::<Vec<_>>());
            let rewritten = apply_vocabulary(&input, &vocab);
            proptest::prop_assert!(rewritten.len() <= input.len());
            let cleaned = clean_words(&input, "en");
            for w in &cleaned {
                let (_, core, _) = split_affixes(&w.text, char::is_alphanumeric);
                proptest::prop_assert!(!matches!(filler_key(core).as_str(), "um" | "uh"));
            }
            let cues: Vec<Cue> = input.chunks(3).map(|c| cue(c.len() as u32 % 2, &c.iter().map(|w| w.text.as_ref()).collect::<Vec<_>>())).collect();
            let (text, truncated) = transcript_text(&cues, max);
            if let (Some(max), true) = (max, truncated) {
                proptest::prop_assert!(text.trim_end_matches('\n').graphemes(true).count() <= max);
            }
            let (kept, _) = truncate_cues(&cues, max);
            proptest::prop_assert!(kept <= cues.len() && (cues.is_empty() || kept >= 1));
        }
    }
}
