//! Sentences for recognizers that give none (pocketsphinx, command plug-ins without punctuation).
//!
//! Without punctuation a transcript is one run-on lowercase sentence: the layout cannot end cues
//! at sentences and no subtitler would sign it off. [`punctuate_by_pauses`] restores what the
//! timing tells: a sentence ends where the speaker pauses (or changes, or stops), unless the word
//! before the pause cannot end a sentence (`the`, `of`, `and`: a hesitation, not an end); English
//! questions get `?` when they open like one (`are you`, `what`, `how do`); each sentence starts
//! with a capital, and English `i` is `I`.
//!
//! It leaves a transcript alone as soon as one word ends a sentence: a recognizer that punctuates
//! knows better than pauses do.

use crate::text::capitalise_first_letter;
use crate::RawWord;

/// The pause, in seconds, that ends a sentence. Chosen on the recognition corpus
/// (scripts/score-recognition): speakers leave 0.5-1 s between sentences and rarely more than
/// 0.3 s inside one.
pub const SENTENCE_PAUSE: f64 = 0.45;

/// Words that do not end an English sentence; a pause after them is a hesitation.
const NEVER_LAST: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "nor", "so", "of", "to", "in", "on", "at", "by", "for",
    "with", "from", "into", "onto", "about", "as", "than", "that", "if", "because", "when",
    "while", "my", "your", "his", "her", "our", "their", "its", "is", "are", "was", "were", "be",
    "i", "we", "you", "they", "he", "she", "very", "not", "this", "these", "those", "uh", "um",
];

/// Words that open an English question.
const WH_WORDS: &[&str] = &[
    "what", "why", "how", "where", "when", "who", "which", "whose",
];
const AUXILIARIES: &[&str] = &[
    "are", "is", "am", "was", "were", "do", "does", "did", "can", "could", "will", "would",
    "shall", "should", "have", "has", "had", "may", "might", "must",
];
const SUBJECTS: &[&str] = &[
    "you", "we", "they", "i", "he", "she", "it", "there", "this", "that", "your", "the",
];

/// Whether a word's text ends a sentence (`.`, `?`, `!`, `…` and their CJK forms, before any
/// closing quotes or brackets).
pub fn ends_sentence(text: &str) -> bool {
    text.trim_end_matches(['"', '\'', '”', '’', ')', ']', '»', '」', '』'])
        .ends_with(['.', '?', '!', '…', '。', '？', '！'])
}

/// Adds sentence ends and capitals to `words` when none of them ends a sentence; returns whether
/// it did. `language` is the transcript's (`en`, `en-GB`, `auto` ...): the question and `I` rules
/// are English only; pauses and capitals apply to every language written with spaces.
pub fn punctuate_by_pauses(words: &mut [RawWord], language: &str) -> bool {
    if words.is_empty() || words.iter().any(|w| ends_sentence(&w.text)) {
        return false;
    }
    let english = {
        let l = language.trim().to_ascii_lowercase();
        l == "en" || l.starts_with("en-") || l == "auto" || l == "multilingual"
    };
    let key = |w: &RawWord| -> String {
        w.text
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase()
    };
    // Where sentences end: after the last word, at a speaker change, or at a long pause after a
    // word that can end one.
    let n = words.len();
    let mut ends = vec![false; n];
    for i in 0..n {
        let last = i + 1 == n;
        let boundary = last
            || words[i + 1].speaker != words[i].speaker
            || words[i + 1].start - words[i].end >= SENTENCE_PAUSE;
        let weak = english && NEVER_LAST.contains(&key(&words[i]).as_str());
        ends[i] = boundary && (last || !weak || words[i + 1].speaker != words[i].speaker);
    }
    let mut start = 0;
    for i in 0..n {
        if !ends[i] {
            continue;
        }
        let question = english && opens_question(&words[start..=i], &key);
        let word = &mut words[i];
        let trimmed = word.text.trim_end_matches([',', ';', ':']).to_string();
        if !trimmed.is_empty() {
            word.text = trimmed;
            word.text.push(if question { '?' } else { '.' });
        }
        start = i + 1;
    }
    // Capitals: each sentence's first word, and English `i`.
    let mut sentence_start = true;
    for (i, word) in words.iter_mut().enumerate() {
        if sentence_start {
            capitalise_first_letter(&mut word.text);
        }
        if english {
            let k = word.text.to_lowercase();
            if k == "i" || k.starts_with("i'") {
                capitalise_first_letter(&mut word.text);
            }
        }
        sentence_start = ends[i];
    }
    true
}

/// Whether a sentence opens like an English question: a wh-word, or an auxiliary followed by a
/// subject (`are you`, `do we`, `can the`).
fn opens_question(sentence: &[RawWord], key: &impl Fn(&RawWord) -> String) -> bool {
    let first = sentence.first().map(key).unwrap_or_default();
    if WH_WORDS.contains(&first.as_str()) {
        // "What a day." and "When I was young, ..." are rarer than questions, but a wh-word with
        // a subject right after it reads as a clause: "when we arrived".
        let second = sentence.get(1).map(key).unwrap_or_default();
        let clause = first != "what" && first != "how" && SUBJECTS.contains(&second.as_str());
        return !clause || sentence.len() <= 3;
    }
    if AUXILIARIES.contains(&first.as_str()) {
        let second = sentence.get(1).map(key).unwrap_or_default();
        return SUBJECTS.contains(&second.as_str());
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(spec: &[(&str, f64, f64)]) -> Vec<RawWord> {
        spec.iter()
            .map(|&(t, s, e)| RawWord {
                text: t.to_string(),
                start: s,
                end: e,
                speaker: 0,
            })
            .collect()
    }

    fn text(words: &[RawWord]) -> String {
        words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn pauses_end_sentences_and_sentences_start_with_capitals() {
        let mut w = words(&[
            ("hello", 0.0, 0.4),
            ("and", 0.45, 0.6),
            ("welcome", 0.65, 1.1),
            ("today", 1.8, 2.1),
            ("i", 2.15, 2.2),
            ("talk", 2.25, 2.5),
            ("about", 2.55, 2.8),
            ("water", 2.85, 3.2),
        ]);
        assert!(punctuate_by_pauses(&mut w, "en"));
        assert_eq!(text(&w), "Hello and welcome. Today I talk about water.");
    }

    #[test]
    fn a_pause_after_a_word_that_cannot_end_a_sentence_is_a_hesitation() {
        let mut w = words(&[
            ("we", 0.0, 0.2),
            ("went", 0.25, 0.5),
            ("to", 0.55, 0.6),
            ("the", 0.65, 0.8),
            ("market", 1.6, 2.0),
        ]);
        punctuate_by_pauses(&mut w, "en");
        assert_eq!(text(&w), "We went to the market.");
    }

    #[test]
    fn english_questions_get_a_question_mark() {
        let mut w = words(&[
            ("are", 0.0, 0.2),
            ("you", 0.25, 0.4),
            ("ready", 0.45, 0.8),
            ("let's", 1.5, 1.7),
            ("begin", 1.75, 2.0),
            ("what", 3.0, 3.2),
            ("did", 3.25, 3.4),
            ("you", 3.45, 3.6),
            ("see", 3.65, 3.9),
            ("do", 5.0, 5.1),
            ("not", 5.15, 5.3),
            ("waste", 5.35, 5.6),
            ("water", 5.65, 6.0),
        ]);
        punctuate_by_pauses(&mut w, "en-GB");
        assert_eq!(
            text(&w),
            "Are you ready? Let's begin. What did you see? Do not waste water."
        );
    }

    #[test]
    fn a_speaker_change_ends_a_sentence_and_other_languages_get_only_pauses_and_capitals() {
        let mut w = words(&[
            ("guten", 0.0, 0.3),
            ("tag", 0.35, 0.6),
            ("wie", 0.62, 0.8),
            ("geht's", 0.85, 1.1),
            ("i", 1.15, 1.2),
        ]);
        w[2].speaker = 1;
        w[3].speaker = 1;
        w[4].speaker = 1;
        punctuate_by_pauses(&mut w, "de");
        assert_eq!(text(&w), "Guten tag. Wie geht's i.");
    }

    #[test]
    fn a_punctuated_transcript_is_left_alone() {
        let mut w = words(&[
            ("hello", 0.0, 0.4),
            ("world.", 2.0, 2.4),
            ("again", 4.0, 4.4),
        ]);
        let before = w.clone();
        assert!(!punctuate_by_pauses(&mut w, "en"));
        assert_eq!(w, before);
        assert!(!punctuate_by_pauses(&mut [], "en"));
    }

    #[test]
    fn trailing_commas_give_way_and_odd_text_does_not_panic() {
        let mut w = words(&[
            ("well,", 0.0, 0.4),
            ("", 2.0, 2.0),
            ("ß", 3.0, 3.1),
            ("ǆemal", 4.0, 4.3),
        ]);
        punctuate_by_pauses(&mut w, "en");
        assert_eq!(w[0].text, "Well.");
        assert_eq!(w[1].text, "");
        // ß has a two-letter capital and stays; ǆ has a one-character capital.
        assert_eq!(w[2].text, "ß.");
        assert_eq!(w[3].text, "Ǆemal.");
    }

    #[test]
    fn closing_quotes_do_not_hide_a_sentence_end() {
        assert!(ends_sentence("said \"yes.\""));
        assert!(ends_sentence("終わり。"));
        assert!(!ends_sentence("well,"));
    }
}
