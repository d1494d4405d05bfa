# The `whisper` recognizer's long-lived worker: cuecraft starts a few of them with
# `python3 -c <this file> --model DIR --threads N --beam B --compute TYPE`. It loads Whisper
# (faster-whisper on CTranslate2) once, then answers requests, one JSON object per line on stdin,
# with JSON lines on stdout. Nothing here touches the network: the model is a local directory.
#
# Memory does not grow with the recording: the WAV file is never read whole. Voice activity is
# found block by block (16 s of audio at a time) and a window is read from the file when it is
# decoded; answers are one line per speech window, never one line the size of the transcript.
#
# Requests (every answer carries the request's `id`; a failure is {"id": 1, "error": "message"}):
#   {"id": 1, "op": "windows", "wav": "/path/a.wav"}
#       -> {"id": 1, "window": [start, end]}   (samples; one line per speech window, in order)
#          {"id": 1, "progress": samples_read}  (after every block)
#          {"id": 1, "done": true, "samples": n}
#   {"id": 2, "op": "detect", "wav": "...", "windows": [[start, end], ...]}   (up to three)
#       -> {"id": 2, "done": true, "language": "en"}  (the first window detected with probability >= 0.5, else
#          the most probable over the windows)
#   {"id": 3, "op": "decode", "wav": "...", "start": s, "end": e, "language": "en" | null,
#    "prompt": "..." | null, "greedy": false}
#       -> {"id": 3, "done": true, "language": "en", "words": [{"w": " Hello,", "s": 0.52, "e": 0.91, "p": 0.97}]}
#          (language null: detected on this window; times in seconds in the whole file; pieces as
#          Whisper writes them, a leading space starting a new word: cuecraft joins them)
#       "greedy": true (cuecraft's second try of a run-on window, with a prompt) decodes at
#       temperature 0 only and answers no words when that decode fails Whisper's own checks
#       (repetition or low confidence) instead of falling back to sampling: a fallback samples
#       five candidates at once (best_of), which took the worker from 391 to 490 MB for a second
#       on a dense hour, and a retry that needs it is not better than the first try anyway.
#
# Windows: the Silero voice-activity model that faster-whisper ships (threshold 0.5, 300 ms of
# silence ends speech, 200 ms padding, speech longer than 29 s split at its last pause) finds
# speech chunks; consecutive chunks are merged into windows spanning at most 30 s, so no word
# straddles a fixed 30 s cut and nothing is decoded where nobody speaks. Each window is decoded in
# one pass (see `decode`); a window whose pass fails Whisper's checks or stops short of the
# window's end goes through Whisper's own long-form loop and its fallback.
import json
import struct
import sys

import numpy as np

WINDOW_S = 30.0
SAMPLE_RATE = 16000
# Silero's frame and the context it sees of the frame before.
FRAME = 512
CONTEXT = 64
# Frames given to the VAD model at once (16 s). The model's state runs on from one batch to the
# next, so the probabilities are the same bits whatever the batch (measured: 10000, faster-whisper's
# batch, 1000 and 250 frames give identical probabilities on 11.6 minutes); the batch only sets
# the memory: about 200 MB above the model at 10000 frames, 10 MB at 250.
VAD_BATCH = 500
THRESHOLD = 0.5
NEG_THRESHOLD = THRESHOLD - 0.15
MIN_SPEECH = SAMPLE_RATE * 200 / 1000
MIN_SILENCE = SAMPLE_RATE * 300 / 1000
PAD = SAMPLE_RATE * 200 / 1000
MAX_SPEECH = SAMPLE_RATE * (WINDOW_S - 1.0) - FRAME - 2 * PAD
# A silence this long inside over-long speech is where it may be split.
MIN_SILENCE_AT_MAX_SPEECH = SAMPLE_RATE * 98 / 1000


class Wav:
    """A 16 kHz mono 16-bit PCM WAV file, read a range at a time."""

    def __init__(self, path):
        self.file = open(path, "rb")
        head = self.file.read(12)
        if len(head) < 12 or head[0:4] != b"RIFF" or head[8:12] != b"WAVE":
            raise ValueError("the audio is not a WAV file")
        fmt = None
        size_on_disk = self.file.seek(0, 2)
        pos = 12
        while pos + 8 <= size_on_disk:
            self.file.seek(pos)
            cid, size = struct.unpack("<4sI", self.file.read(8))
            if cid == b"fmt ":
                fmt = struct.unpack("<HHIIHH", self.file.read(16))
            elif cid == b"data":
                self.offset = pos + 8
                # A WAV over 4 GiB (37 hours) cannot give its size: the rest of the file is data.
                available = size_on_disk - self.offset
                size = available if size in (0, 0xFFFFFFFF) else min(size, available)
                self.samples = size // 2
                break
            pos += 8 + size + (size & 1)
        else:
            raise ValueError("the WAV file has no audio data")
        if fmt is None:
            raise ValueError("the WAV file has no format")
        _tag, channels, rate, _br, _align, bits = fmt
        if channels != 1 or rate != SAMPLE_RATE or bits != 16:
            raise ValueError("the audio is not 16 kHz mono 16-bit PCM")

    def read(self, start, end):
        """Samples [start, end) as float32 in [-1, 1] (fewer at the end of the file)."""
        start, end = max(0, start), min(end, self.samples)
        if end <= start:
            return np.zeros(0, dtype=np.float32)
        self.file.seek(self.offset + 2 * start)
        raw = self.file.read(2 * (end - start))
        raw = raw[: len(raw) - len(raw) % 2]
        return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0

    def close(self):
        self.file.close()


def speech_probabilities(wav):
    """Silero's speech probability of every 512-sample frame, a block of VAD_BATCH frames at a
    time, as (frames read so far, probabilities). The file is padded with zeros to a whole number
    of frames plus one (as faster-whisper pads it); each frame sees the last 64 samples of the
    frame before (zeros for the first) and the model's state runs on across blocks."""
    from faster_whisper.vad import get_vad_model

    session = get_vad_model().session
    h = np.zeros((1, 1, 128), dtype="float32")
    c = np.zeros((1, 1, 128), dtype="float32")
    tail = np.zeros(CONTEXT, dtype="float32")
    frames = wav.samples // FRAME + 1
    for first in range(0, frames, VAD_BATCH):
        last = min(frames, first + VAD_BATCH)
        audio = wav.read(first * FRAME, last * FRAME)
        audio = np.pad(audio, (0, (last - first) * FRAME - audio.shape[0]))
        batch = audio.reshape(-1, FRAME)
        context = np.empty((batch.shape[0], CONTEXT), dtype="float32")
        context[0] = tail
        context[1:] = batch[:-1, -CONTEXT:]
        tail = batch[-1, -CONTEXT:].copy()
        out, h, c = session.run(
            None, {"input": np.concatenate([context, batch], 1), "h": h, "c": c}
        )
        yield last, out.reshape(-1)


class Chunks:
    """Speech chunks from frame probabilities, fed a block at a time: Silero's rules (speech
    starts at a frame >= THRESHOLD, ends after MIN_SILENCE below NEG_THRESHOLD, speech longer than
    MAX_SPEECH is split at its last silence of MIN_SILENCE_AT_MAX_SPEECH or else where it is;
    chunks shorter than MIN_SPEECH dropped), padded by PAD on both sides (half the silence when
    two chunks are closer than 2 * PAD). A chunk is given out once the next one has started, when
    its padding is known."""

    def __init__(self, samples):
        self.samples = samples
        self.i = 0
        self.triggered = False
        self.start = None
        self.temp_end = 0
        self.prev_end = 0
        self.next_start = 0
        self.raw = []  # unpadded chunks not yet given out (at most two)
        self.first = True

    def _close(self, end):
        self.raw.append([self.start, end])
        self.start = None

    def feed(self, probs):
        """Takes the next frames' probabilities; returns the chunks now final."""
        for p in probs:
            here = FRAME * self.i
            self.i += 1
            if p >= THRESHOLD and self.temp_end:
                self.temp_end = 0
                if self.next_start < self.prev_end:
                    self.next_start = here
            if p >= THRESHOLD and not self.triggered:
                self.triggered = True
                self.start = here
                continue
            if self.triggered and here - self.start > MAX_SPEECH:
                if self.prev_end:
                    self._close(self.prev_end)
                    if self.next_start < self.prev_end:
                        self.triggered = False
                    else:
                        self.start = self.next_start
                    self.prev_end = self.next_start = self.temp_end = 0
                else:
                    self._close(here)
                    self.prev_end = self.next_start = self.temp_end = 0
                    self.triggered = False
                    continue
            if p < NEG_THRESHOLD and self.triggered:
                if not self.temp_end:
                    self.temp_end = here
                if here - self.temp_end > MIN_SILENCE_AT_MAX_SPEECH:
                    self.prev_end = self.temp_end
                if here - self.temp_end < MIN_SILENCE:
                    continue
                if self.temp_end - self.start > MIN_SPEECH:
                    self._close(self.temp_end)
                else:
                    self.start = None
                self.prev_end = self.next_start = self.temp_end = 0
                self.triggered = False
                continue
        return self._padded(final=False)

    def finish(self):
        """The chunks left once every frame has been fed."""
        if self.start is not None and self.samples - self.start > MIN_SPEECH:
            self._close(self.samples)
        return self._padded(final=True)

    def _padded(self, final):
        out = []
        while len(self.raw) >= 2 or (final and self.raw):
            chunk = self.raw[0]
            if self.first:
                chunk[0] = int(max(0, chunk[0] - PAD))
                self.first = False
            if len(self.raw) >= 2:
                nxt = self.raw[1]
                silence = nxt[0] - chunk[1]
                if silence < 2 * PAD:
                    chunk[1] += int(silence // 2)
                    nxt[0] = int(max(0, nxt[0] - silence // 2))
                else:
                    chunk[1] = int(min(self.samples, chunk[1] + PAD))
                    nxt[0] = int(max(0, nxt[0] - PAD))
            else:
                chunk[1] = int(min(self.samples, chunk[1] + PAD))
            out.append((int(chunk[0]), int(chunk[1])))
            self.raw.pop(0)
        return out


def speech_windows(wav, emit):
    """Gives `emit` every window (start, end) in samples, in order, and ("progress", frames read)
    after every block: consecutive speech chunks merged while they span at most WINDOW_S."""
    chunks = Chunks(wav.samples)
    limit = int(WINDOW_S * SAMPLE_RATE)
    window = None

    def take(found):
        nonlocal window
        for start, end in found:
            if window and end - window[0] <= limit:
                window[1] = end
            else:
                if window:
                    emit("window", window)
                window = [start, end]

    for read, probs in speech_probabilities(wav):
        take(chunks.feed(probs))
        emit("progress", min(read * FRAME, wav.samples))
    take(chunks.finish())
    if window:
        emit("window", window)


# Whisper's checks of a decode; one that fails them is tried again at the next temperature.
COMPRESSION_RATIO_THRESHOLD = 2.4
LOG_PROB_THRESHOLD = -1.0
NO_SPEECH_THRESHOLD = 0.6
# A one-pass decode covers its window when its last word ends at most this many seconds before
# the window does and no word lasts longer than LONG_WORD_S (see `decode`).
REST_S = 1.0
LONG_WORD_S = 2.0


def decode(model, beam, chunk, lang, prompt, offset, greedy=False):
    """One window's word pieces, with times in the whole file. `greedy`: temperature 0 only, and
    no pieces at all when that decode fails Whisper's checks (see the header).

    First the window in one pass (one encoder pass, one beam search, words aligned to it). That
    is kept when it passes Whisper's checks and covers the window: its last word ends within
    `REST_S` of the window's end and no word is stretched over more than `LONG_WORD_S` (where
    Whisper stops early or skips speech, the alignment stretches a word over what it left out:
    seen on espeak-ng German, a word "lasting" 21 s). Otherwise the window goes through Whisper's
    own long-form loop as before, which, given word times, starts a second pass at the last
    word's end whenever its decode did not end on a timestamp: an encoder pass and a beam
    search over the window's last fraction of a second padded to 30 s, which finds nothing or
    invents words (falling back to sampling as it does). One pass gives better words on the
    recognition corpus (docs/decisions/pipeline.md, "Windows").
    """
    if len(chunk) == 0:
        return []
    segments = one_pass(model, beam, chunk, lang, prompt)
    if segments is not None and not covers(segments, len(chunk) / SAMPLE_RATE):
        segments = None
    if segments is None:
        segments, _info = model.transcribe(
            chunk,
            language=lang,
            beam_size=beam,
            word_timestamps=True,
            condition_on_previous_text=False,
            initial_prompt=prompt,
            vad_filter=False,
            temperature=[0.0] if greedy else [0.0, 0.2, 0.4, 0.6],
            compression_ratio_threshold=COMPRESSION_RATIO_THRESHOLD,
            log_prob_threshold=LOG_PROB_THRESHOLD,
            no_speech_threshold=NO_SPEECH_THRESHOLD,
        )
        segments = list(segments)
        if greedy and any(fails(seg) for seg in segments):
            return []
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


def fails(seg):
    """Whether a segment fails Whisper's checks: repetition or low confidence."""
    return (
        seg.compression_ratio > COMPRESSION_RATIO_THRESHOLD
        or seg.avg_logprob < LOG_PROB_THRESHOLD
    )


def covers(segments, seconds):
    """Whether a one-pass decode's words cover a window of `seconds`: words in it, the last
    ending within `REST_S` of its end, none longer than `LONG_WORD_S`."""
    words = [w for seg in segments for w in seg.words or []]
    if not words:
        return False
    return seconds - words[-1].end <= REST_S and all(
        w.end - w.start <= LONG_WORD_S for w in words
    )


def one_pass(model, beam, chunk, lang, prompt):
    """The segments of a single decode of `chunk` at temperature 0 without timestamp tokens
    (faster-whisper's batched path with the window as its one clip), or None when that decode
    fails Whisper's checks: repetition (compression ratio) or low confidence (mean
    log-probability, which is also where Whisper's no-speech rule applies)."""
    from faster_whisper import BatchedInferencePipeline

    segments, _info = BatchedInferencePipeline(model).transcribe(
        chunk,
        language=lang,
        beam_size=beam,
        word_timestamps=True,
        initial_prompt=prompt,
        vad_filter=False,
        clip_timestamps=[{"start": 0.0, "end": len(chunk) / SAMPLE_RATE}],
        batch_size=1,
        without_timestamps=True,
        temperature=[0.0],
        log_progress=False,
    )
    segments = list(segments)
    if any(fails(seg) for seg in segments):
        return None
    return segments


def detect(model, audio):
    lang, prob, _ = model.detect_language(audio=audio)
    return lang, prob


def answer(req, model, beam, send):
    op = req.get("op")
    wav = Wav(req["wav"])
    try:
        if op == "windows":
            def emit(kind, value):
                if kind == "window":
                    send({"window": [int(value[0]), int(value[1])]})
                else:
                    send({"progress": int(value)})

            speech_windows(wav, emit)
            send({"done": True, "samples": wav.samples})
        elif op == "detect":
            # The first confident answer wins, otherwise the most probable over the windows.
            best = {}
            for s, e in req["windows"][:3]:
                lang, prob = detect(model, wav.read(s, e))
                if prob >= 0.5:
                    send({"done": True, "language": lang})
                    return
                best[lang] = max(best.get(lang, 0.0), prob)
            send({"done": True, "language": max(best, key=best.get) if best else None})
        elif op == "decode":
            s, e = int(req["start"]), int(req["end"])
            chunk = wav.read(s, e)
            lang = req.get("language")
            if lang is None:
                lang, _ = detect(model, chunk)
            words = decode(
                model, beam, chunk, lang, req.get("prompt"), s / SAMPLE_RATE,
                greedy=bool(req.get("greedy")),
            )
            send({"done": True, "language": lang, "words": words})
        else:
            send({"error": f"unknown request {op!r}"})
    finally:
        wav.close()


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

        def send(out, rid=req.get("id")):
            out["id"] = rid
            print(json.dumps(out, ensure_ascii=False), flush=True)

        try:
            answer(req, model, beam, send)
        except Exception as e:  # noqa: BLE001 - one bad file must not end the worker
            send({"error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
