#!/usr/bin/env python3
"""Word timings for cuecraft's quality corpus, from the texts in quality/texts/.

Each text is one turn per line (`SPEAKER: words`), with `[pause S]` lines for silences of S
seconds. Every word gets a start and end from a simple model of speech: a duration per syllable
(per genre), short gaps between words, longer ones after clause and sentence punctuation and at
turn changes, and now and then a hesitation. It is seeded, so the same texts give the same bytes.

Two forms per text: `NAME.json` as written (punctuated, capitalised) and `NAME.lower.json` as a
recogniser without punctuation gives it (lowercase, no punctuation except inside a word), with the
same times and speakers, word for word.

Usage: python3 quality/gen.py   (writes quality/*.json next to this file)
"""
import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))

# ms per syllable, gap between words (lo, hi), after a comma, after a sentence, at a turn change,
# hesitation probability and length.
GENRES = {
    "interview": dict(syl={0: 150, 1: 160}, gap=(20, 80), clause=(120, 300), sentence=(250, 650),
                      turn=(200, 900), hes_p=0.035, hes=(300, 700), seed=11),
    "lecture": dict(syl={0: 200}, gap=(25, 100), clause=(150, 400), sentence=(500, 1100),
                    turn=(500, 900), hes_p=0.06, hes=(400, 1000), seed=12),
    "news": dict(syl={0: 158, 1: 166, 2: 162}, gap=(10, 50), clause=(80, 220), sentence=(350, 700),
                 turn=(700, 1100), hes_p=0.01, hes=(200, 400), seed=13),
}


def syllables(word):
    w = re.sub(r"[^a-z]", "", word.lower())
    groups = re.findall(r"[aeiouy]+", w)
    n = len(groups)
    if w.endswith("e") and n > 1 and not w.endswith(("le", "ee")):
        n -= 1
    return max(1, n)


def lower_form(word):
    """The word as a recogniser without punctuation writes it."""
    w = word.lower()
    w = re.sub(r"^[^\w]+|[^\w]+$", "", w)
    return w


def timed(name):
    g = GENRES[name]
    rnd = random.Random(g["seed"])
    words = []
    t = 0.35
    prev_speaker = None
    with open(os.path.join(HERE, "texts", name + ".txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"\[pause ([0-9.]+)\]", line)
            if m:
                t += float(m.group(1))
                continue
            speaker_text, text = line.split(":", 1)
            speaker = int(speaker_text)
            if prev_speaker is not None and speaker != prev_speaker:
                t += rnd.uniform(*g["turn"]) / 1000
            prev_speaker = speaker
            tokens = text.split()
            for k, tok in enumerate(tokens):
                dur = syllables(tok) * g["syl"][speaker] * rnd.uniform(0.85, 1.15) + 40
                start = t
                end = t + dur / 1000
                words.append({"text": tok, "start": round(start, 3), "end": round(end, 3),
                              "speaker": speaker})
                t = end
                if k + 1 == len(tokens):
                    t += rnd.uniform(*g["sentence"]) / 1000
                elif tok.endswith((".", "?", "!")):
                    t += rnd.uniform(*g["sentence"]) / 1000
                elif tok.endswith((",", ";", ":")):
                    t += rnd.uniform(*g["clause"]) / 1000
                elif rnd.random() < g["hes_p"]:
                    t += rnd.uniform(*g["hes"]) / 1000
                else:
                    t += rnd.uniform(*g["gap"]) / 1000
    return words


def write(path, words):
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(w, ensure_ascii=False) for w in words))
        f.write("\n]\n")


def main():
    for name in GENRES:
        words = timed(name)
        write(os.path.join(HERE, name + ".json"), words)
        lower = [dict(w, text=lower_form(w["text"])) for w in words]
        write(os.path.join(HERE, name + ".lower.json"), lower)
        minutes = words[-1]["end"] / 60
        chars = sum(len(w["text"]) + 1 for w in words) - 1
        print(f"{name}: {len(words)} words, {minutes:.2f} min, {len(words) / minutes:.0f} words/min,"
              f" {chars / (minutes * 60):.1f} characters/s")


if __name__ == "__main__":
    main()
