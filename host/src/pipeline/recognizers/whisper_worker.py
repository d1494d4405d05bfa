# The `whisper` recognizer's long-lived worker: one per pipeline worker, started by cuecraft with
# `python3 -c <this file> --model DIR --threads N --beam B --compute TYPE`. It loads Whisper
# (faster-whisper on CTranslate2) once, then answers one JSON request per line on stdin with one
# JSON line on stdout. Nothing here touches the network: the model is a local directory.
#
# Request:  {"id": 1, "wav": "/path/a.wav", "language": "auto" | "multilingual" | "en", "prompt": "..." | null}
# Response: {"id": 1, "language": "en" | null, "windows": [[start, end, "en"], ...],
#            "words": [{"w": " Hello,", "s": 0.52, "e": 0.91, "p": 0.97, "k": 0}, ...]}
#           (`k`: the index of the word's window)
#        or {"id": 1, "error": "readable message"}
#
# The audio is cut into windows of at most 30 s at pauses found by the Silero voice-activity model
# that faster-whisper ships, and each window is transcribed on its own with its offset added back,
# so no word straddles a fixed 30 s cut and nothing is transcribed where nobody speaks. Word pieces
# are sent as Whisper writes them (leading space = a new word); cuecraft joins them.
import json
import struct
import sys

WINDOW_S = 30.0
SENTENCE_ENDS = (".", "?", "!", "。", "？", "！", "…")
SAMPLE_RATE = 16000


def read_wav(path):
    """16 kHz mono 16-bit PCM WAV -> float32 samples in [-1, 1]."""
    import numpy as np

    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or data[0:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("the audio is not a WAV file")
    pos, fmt, pcm = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        body = data[pos + 8 : pos + 8 + size]
        if cid == b"fmt ":
            fmt = struct.unpack("<HHIIHH", body[:16])
        elif cid == b"data":
            pcm = body
            break
        pos += 8 + size + (size & 1)
    if fmt is None or pcm is None:
        raise ValueError("the WAV file has no audio data")
    _tag, channels, rate, _br, _align, bits = fmt
    if channels != 1 or rate != SAMPLE_RATE or bits != 16:
        raise ValueError("the audio is not 16 kHz mono 16-bit PCM")
    pcm = pcm[: len(pcm) - (len(pcm) % 2)]
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def speech_windows(audio):
    """Windows (start, end) in samples, cut at pauses: consecutive speech chunks (each at most
    WINDOW_S - 1 s plus padding, the VAD splitting longer speech at its last pause) merged while
    they span at most WINDOW_S."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    opts = VadOptions(
        threshold=0.5,
        min_speech_duration_ms=200,
        max_speech_duration_s=WINDOW_S - 1.0,
        min_silence_duration_ms=300,
        speech_pad_ms=200,
    )
    chunks = get_speech_timestamps(audio, opts)
    limit = int(WINDOW_S * SAMPLE_RATE)
    windows = []
    for c in chunks:
        start, end = int(c["start"]), int(c["end"])
        if windows and end - windows[-1][0] <= limit:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    return windows


def sentence_ends(words):
    return sum(1 for w in words if w["w"].strip().endswith(SENTENCE_ENDS))


def run_on(words):
    """Whether a window reads as one run-on sentence: fewer than one end per 25 words."""
    return len(words) >= 12 and sentence_ends(words) * 25 < len(words)


def decode(model, beam, chunk, lang, prompt, offset):
    """One window's word pieces, with times in the whole file."""
    segments, _info = model.transcribe(
        chunk,
        language=lang,
        beam_size=beam,
        word_timestamps=True,
        condition_on_previous_text=False,
        initial_prompt=prompt,
        vad_filter=False,
        temperature=[0.0, 0.2, 0.4, 0.6],
        compression_ratio_threshold=2.4,
        log_prob_threshold=-1.0,
        no_speech_threshold=0.6,
    )
    out = []
    for seg in segments:
        for w in seg.words or []:
            out.append(
                {
                    "w": w.word,
                    "s": round(w.start + offset, 3),
                    "e": round(w.end + offset, 3),
                    "p": round(float(w.probability), 3),
                }
            )
    return out


def detect(model, audio):
    lang, prob, _ = model.detect_language(audio=audio)
    return lang, prob


def transcribe(model, beam, req):
    audio = read_wav(req["wav"])
    requested = req.get("language") or "auto"
    prompt = req.get("prompt") or None
    windows = speech_windows(audio)
    if not windows:
        return {"language": None, "windows": [], "words": []}

    forced = None if requested in ("auto", "multilingual") else requested
    if requested == "auto":
        # Detect on up to the first three windows of speech: the first confident answer wins,
        # otherwise the most probable over those windows.
        best = {}
        for s, e in windows[:3]:
            lang, prob = detect(model, audio[s:e])
            if prob >= 0.5:
                forced = lang
                break
            best[lang] = max(best.get(lang, 0.0), prob)
        if forced is None:
            forced = max(best, key=best.get)

    words, spans = [], []
    context = {}  # language -> the last window's text in it that was written with punctuation
    for s, e in windows:
        chunk = audio[s:e]
        lang = forced
        if lang is None:
            lang, _ = detect(model, chunk)
        offset = s / SAMPLE_RATE
        window_words = decode(model, beam, chunk, lang, prompt, offset)
        # Whisper sometimes writes a whole window in lowercase without punctuation. Such a window
        # is decoded once more with the previous window's punctuated text as its prompt (what
        # Whisper's own conditioning on previous text does, but only here, where it cannot start a
        # loop), and the retry is kept when it has more sentence ends.
        # The first window of English has a neutral punctuated sentence instead.
        if lang == "en":
            context.setdefault(lang, "Hello, and welcome. Are you ready? Let's begin.")
        if lang in context and run_on(window_words):
            retry_prompt = context[lang] if not prompt else prompt + " " + context[lang]
            retry = decode(model, beam, chunk, lang, retry_prompt, offset)
            if sentence_ends(retry) > sentence_ends(window_words):
                window_words = retry
        if window_words and not run_on(window_words):
            context[lang] = "".join(w["w"] for w in window_words).strip()[-300:]
        for w in window_words:
            w["k"] = len(spans)
        words.extend(window_words)
        spans.append([round(s / SAMPLE_RATE, 3), round(e / SAMPLE_RATE, 3), lang])
    return {"language": forced, "windows": spans, "words": words}


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    try:
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import _LANGUAGE_CODES

        model = WhisperModel(
            args["--model"],
            device="cpu",
            compute_type=args.get("--compute", "int8"),
            cpu_threads=int(args.get("--threads", "1")),
            local_files_only=True,
        )
    except Exception as e:  # noqa: BLE001 - reported to cuecraft as one line
        print(json.dumps({"fatal": f"could not load the Whisper model: {e}"}), flush=True)
        return 1
    beam = int(args.get("--beam", "1"))
    print(json.dumps({"ready": True, "languages": list(_LANGUAGE_CODES)}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            print(json.dumps({"id": None, "error": "malformed request"}), flush=True)
            continue
        try:
            out = transcribe(model, beam, req)
        except Exception as e:  # noqa: BLE001 - one bad file must not end the worker
            out = {"error": f"{type(e).__name__}: {e}"}
        out["id"] = req.get("id")
        print(json.dumps(out, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
