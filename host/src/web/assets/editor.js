// The subtitle editor. The server owns the words: every operation is sent as an edit of the
// transcript's current revision and the server answers the re-laid-out cues (or 409 when someone
// else saved first). Undo, redo and restore save an earlier revision's words as a new revision.

import { Timeline } from "./timeline.js";
import { Speakers } from "./speakers.js";

const root = document.getElementById("editor");
const jobId = root.dataset.job;
const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? "";
const $ = (id) => document.getElementById(id);

const state = {
  data: null,
  transcript: null, // id
  revision: 0,
  cue: 0, // selected cue position
  word: null, // selected word index (in the stored words)
  undo: [],
  redo: [],
  media: null,
  busy: false,
  // The cue text box that is open: {k, from, to, index, start, original, area, li}. Whatever
  // the subtitler does next (blur, another cue, a toolbar action, a shortcut, leaving the page)
  // commits it first; see commitText.
  editing: null,
  saving: false,
  conflict: false, // a save was refused: someone else saved first

};

// Every action runs after the previous one has finished (its answer applied), so a quick second
// key press acts on what the first made, and nothing is refused for being "busy".
let chain = Promise.resolve();
function serial(f) {
  const run = chain.then(f);
  chain = run.catch(() => {});
  return run;
}
// An action: the open text box is committed first; when that fails the action does not run and
// the typed text stays in its box.
const act =
  (f) =>
  (...args) =>
    serial(async () => {
      if ((await flushNudge()) && (await commitText())) return f(...args);
      return false;
    });

const fmt = (ms) => {
  const t = Math.max(0, Math.round(ms));
  const h = Math.floor(t / 3600000);
  const m = Math.floor(t / 60000) % 60;
  const s = Math.floor(t / 1000) % 60;
  const f = String(t % 1000).padStart(3, "0");
  const mm = h > 0 ? `${h}:${String(m).padStart(2, "0")}` : `${m}`;
  return `${mm}:${String(s).padStart(2, "0")}.${f}`;
};

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

function problem(text) {
  const p = $("problem");
  p.textContent = text ?? "";
  p.hidden = !text;
}

function saveState(text, kind = "") {
  const s = $("save-state");
  s.textContent = text;
  s.dataset.kind = kind;
}

function savedState() {
  if (state.editing && state.editing.area.value !== state.editing.original) {
    saveState(`Unsaved change in cue ${state.editing.index}`, "unsaved");
  } else if (state.transcript) saveState(`Saved · revision ${state.revision}`, "saved");
}

async function load() {
  const q = state.transcript ? `?transcript=${state.transcript}` : "";
  const resp = await fetch(`/editor/${jobId}/data${q}`, { headers: { Accept: "application/json" } });
  if (!resp.ok) {
    problem(`Could not load the project (${resp.status}).`);
    return;
  }
  apply(await resp.json());
  restoreDraft();
  if (state.data.job.status !== "ready" && state.data.job.status !== "failed") {
    setTimeout(load, 3000);
  }
}

function apply(data) {
  const patched = data.patch && state.data?.cues && patchCues(data.patch);
  if (data.patch && !patched) {
    // The page's cues are not the ones the patch was made against: load them whole.
    load();
    return;
  }
  if (patched) {
    data.cues = state.data.cues;
    delete data.patch;
  }
  state.data = data;
  // What the server says about the last change (a nudge the layout's rules held back).
  $("notice").textContent = data.notice ?? "";
  $("notice").hidden = !data.notice;
  $("job-status").textContent = data.job.status;
  $("job-status").className = `status status-${data.job.status}`;
  if (data.job.status === "failed") problem(`This job failed: ${data.job.error ?? "unknown error"}`);
  if (data.transcript) {
    state.transcript = data.transcript.id;
    state.revision = data.transcript.revision;
    savedState();
  } else if (data.job.status !== "failed") {
    saveState(`Waiting for the job (${data.job.status})…`);
  }
  renderTranscripts();
  renderBeside();
  if (!patched) renderCues();
  // The cue list was rendered again: the current cue and word are marked afresh.
  lastCurrent = -1;
  lastWord = null;
  subtitleShown = null;
  if (state.media) showTime(state.media.currentTime * 1000);
  fillSettings();
  const qc = data.qc;
  $("qc").textContent = qc ? `${qc.errors} errors · ${qc.warnings} warnings` : "";
  renderDownloads();
  speakers.render(); // speakers.js: the Speakers panel and the text transcript
  setupMedia();
  updateFind();
  updateUndo();
  loadHistory();
}

function renderTranscripts() {
  const sel = $("transcript");
  sel.replaceChildren();
  for (const t of state.data.transcripts) {
    const label = t.kind === "original" ? `Original (${t.language})` : `${t.label ?? t.kind} (${t.language})`;
    const o = el("option", { value: t.id, text: label });
    if (t.id === state.transcript) o.selected = true;
    sel.append(o);
  }
  sel.hidden = state.data.transcripts.length < 2;
}

// A clean version or a translation is shown side by side with the original: its cues on the
// left, the original's text over the same time on the right.
function renderBeside() {
  const list = state.data.transcripts ?? [];
  const current = list.find((t) => t.id === state.transcript);
  const original = list.find((t) => t.kind === "original");
  const beside = Boolean(current && original && current.id !== original.id);
  $("cues").classList.toggle("beside", beside);
  $("beside-head").hidden = !beside;
  if (beside) {
    $("beside-this").textContent = current.kind === "clean" ? `Clean version (${current.language})` : `${current.label ?? "Translation"} (${current.language})`;
    $("beside-original").textContent = `Original (${original.language})`;
  }
}

function renderDownloads() {
  for (const a of document.querySelectorAll("a.download")) {
    const t = state.transcript ? `&transcript=${state.transcript}` : "";
    a.href = `/editor/${jobId}/download?format=${a.dataset.format}${t}`;
  }
}

function cueText(cue) {
  return cue.words.map((w) => w.text).join(" ");
}

function renderCues() {
  const list = $("cues");
  const cues = state.data.cues;
  list.replaceChildren();
  cues.forEach((cue, k) => list.append(renderCue(cue, k)));
  if (state.cue >= cues.length) state.cue = Math.max(0, cues.length - 1);
  markSelection();
}

// An edit's answer carries only the cues that changed: cues [from, from + remove) of the page's
// list are replaced, the later ones keep their content and move their numbers and word indices.
// False when the page does not hold the cues the patch was made against.
function patchCues(p) {
  const cues = state.data.cues;
  if (cues.length !== p.baseCueCount || p.from + p.remove > cues.length) return false;
  const dk = p.cues.length - p.remove;
  const dw = p.wordDelta;
  const list = $("cues");
  const items = Array.from(list.children);
  if (items.length !== cues.length) return false;
  for (let k = p.from + p.remove; k < cues.length; k++) {
    const c = cues[k];
    c.index += dk;
    if (dw !== 0) {
      c.from += dw;
      c.to += dw;
      for (const w of c.words) w.i += dw;
    }
  }
  cues.splice(p.from, p.remove, ...p.cues);
  const before = items[p.from + p.remove] ?? null;
  for (const li of items.slice(p.from, p.from + p.remove)) li.remove();
  const fresh = document.createDocumentFragment();
  p.cues.forEach((c, n) => fresh.append(renderCue(c, p.from + n)));
  list.insertBefore(fresh, before);
  if (dk !== 0 || dw !== 0) {
    const now = list.children;
    for (let k = p.from + p.cues.length; k < cues.length; k++) {
      const li = now[k];
      li.dataset.k = String(k);
      li.querySelector(".idx").textContent = String(cues[k].index);
      li.setAttribute("aria-label", cueLabel(cues[k]));
      if (dw !== 0) for (const s of li.querySelectorAll(".w[data-i]")) s.dataset.i = String(Number(s.dataset.i) + dw);
    }
  }
  if (state.cue >= cues.length) state.cue = Math.max(0, cues.length - 1);
  return true;
}

function cueLabel(cue) {
  return `Cue ${cue.index}, ${fmt(cue.start)} to ${fmt(cue.end)}`;
}

function renderCue(cue, k) {
  // One Tab stop for the list: the selected cue (markSelection); arrow keys move inside it.
  const li = el("li", { class: "cue", tabIndex: -1, "data-k": String(k) });
  li.setAttribute("aria-label", cueLabel(cue));
  const text = el("div", { class: "text" });
  // The lines as laid out; each word of the cue a clickable span in the line it ends up on. When
  // the layout showed a word in pieces (a word longer than a line), the words are shown instead.
  const tokens = cue.lines.reduce((n, l) => n + l.split(" ").length, 0);
  const lines = tokens === cue.words.length ? cue.lines : [cue.words.map((w) => w.text).join(" ")];
  let wi = 0;
  for (const line of lines) {
    const lineEl = el("span", { class: "line" });
    const parts = line.split(" ");
    parts.forEach((part, n) => {
      const w = cue.words[Math.min(wi, cue.words.length - 1)];
      const span = el("span", { class: "w", text: part });
      if (w) {
        span.dataset.i = String(w.i);
        span.dataset.start = String(w.start);
        span.dataset.end = String(w.end);
      }
      lineEl.append(span);
      if (n < parts.length - 1) lineEl.append(" ");
      wi++;
    });
    text.append(lineEl);
  }
  li.append(
    el("span", { class: "idx", text: String(cue.index) }),
    el("span", { class: "times", text: `${showTimeText(cue.start)}\n${showTimeText(cue.end)}\n${((cue.end - cue.start) / 1000).toFixed(2)} s · ${cps(cue).toFixed(0)} CPS` }),
    text,
  );
  text.prepend(speakers.label(cue, li)); // speakers.js: names and colours
  if (cue.source !== undefined) {
    const src = el("div", { class: "source", text: cue.source, title: "The original over the same time" });
    if (cue.sourceChanged) {
      // The original's words here changed since this cue was made or last edited.
      li.classList.add("source-changed");
      src.prepend(el("strong", { class: "changed", text: "Original changed: " }));
    }
    li.append(src);
  }
  if (cue.warnings.length > 0) {
    li.classList.add("has-problem");
    // Each warning with its detail in the list (not only a tooltip), and its one-click fix where
    // there is one.
    const box = el("div", { class: "warnings" });
    for (const w of cue.warnings) {
      const sig = el("div", { class: `warning level-${w.level}`, "data-rule": w.rule });
      sig.setAttribute("role", "note");
      sig.append(el("strong", { text: w.label }), el("span", { class: "detail", text: ` ${w.message}` }));
      const fix = fixFor(w, k);
      if (fix) {
        // Reached by Tab in the selected cue only (the list stays one Tab stop).
        const b = el("button", { type: "button", class: "fix", text: fix.text, "data-fix": fix.kind, tabIndex: -1 });
        b.setAttribute("aria-label", `${fix.text} (cue ${cue.index})`);
        sig.append(" ", b);
      }
      box.append(sig);
    }
    li.append(box);
  }
  return li;
}

// The one-click fix of a warning, where there is one: a cue read too fast is extended to the
// pace (its end moved; a next cue in the way moves or the server says why not), a weak line end
// or a one-word line at the cue's end sends the last word to the next cue.
function fixFor(w, k) {
  const cue = state.data?.cues[k];
  const next = state.data?.cues[k + 1];
  if (!cue) return null;
  if (w.rule === "reading-pace" && paceOf(w)) return { kind: "pace", text: "Extend to pace" };
  // Only where the cue's own last word is the problem: a one-line cue ending weakly, a last
  // line of one word.
  const last = cue.lines[cue.lines.length - 1] ?? "";
  const fits = (w.rule === "weak-line-end" && cue.lines.length === 1) || (w.rule === "one-word-line" && cue.lines.length > 1 && !last.includes(" "));
  if (fits && next) return { kind: "movelast", text: "Last word to next cue" };
  return null;
}

// The reading pace a warning was judged by (its label says "over N CPS").
function paceOf(w) {
  const m = /over (\d+(?:\.\d+)?) CPS/.exec(w.label ?? "");
  return m ? Number(m[1]) : null;
}

function markSelection() {
  for (const li of document.querySelectorAll("li.cue")) {
    const sel = Number(li.dataset.k) === state.cue;
    li.classList.toggle("selected", sel);
    li.tabIndex = sel ? 0 : -1;
    for (const b of li.querySelectorAll("button.fix")) b.tabIndex = sel ? 0 : -1;
    li.setAttribute("aria-current", sel ? "true" : "false");
  }
  for (const w of document.querySelectorAll(".w.sel")) w.classList.remove("sel");
  if (state.word !== null) {
    document.querySelector(`.w[data-i="${state.word}"]`)?.classList.add("sel");
  }
  const cue = state.data?.cues[state.cue];
  if (cue) $("speaker").value = String(cue.speaker);
  speakers.marked(); // speakers.js: a Shift+click selection of cues
  updateCuebar();
}

function selectCue(k, focus = true) {
  const cues = state.data.cues;
  if (cues.length === 0) return;
  state.cue = Math.max(0, Math.min(cues.length - 1, k));
  const cue = cues[state.cue];
  if (state.word === null || state.word < cue.from || state.word >= cue.to) state.word = cue.from;
  // The re-layout range starts as the selected cue.
  $("relayout-from").value = $("relayout-to").value = String(state.cue + 1);
  markSelection();
  const li = document.querySelector(`li.cue[data-k="${state.cue}"]`);
  if (focus && li) {
    li.focus();
    li.scrollIntoView({ block: "nearest" });
  } else li?.scrollIntoView({ block: "nearest" });
  timeline.reveal(cue.start, cue.end);
  timeline.draw();
}

function seek(ms) {
  if (state.media) state.media.currentTime = ms / 1000;
  showTime(ms);
}

// ----- times as text, the subtitle on the picture -----------------------------------------------

// Times are shown and typed as timecode (HH:MM:SS:FF at the job's frame rate) or as seconds
// (m:ss.mmm), a preference kept in the browser.
const timePref = () => {
  try {
    return localStorage.getItem("cuecraft-time-format") === "seconds" ? "seconds" : "timecode";
  } catch {
    return "timecode";
  }
};

function nominalFps() {
  const fr = state.data?.job?.frameRate;
  return fr && fr.num > 0 ? Math.max(1, Math.round(fr.num / fr.den)) : 25;
}

function timecode(ms) {
  const fr = state.data?.job?.frameRate ?? { num: 25, den: 1 };
  const base = nominalFps();
  const frames = Math.round((Math.max(0, ms) * fr.num) / (fr.den * 1000));
  const ff = frames % base;
  const s = Math.floor(frames / base);
  const p = (n) => String(n).padStart(2, "0");
  return `${p(Math.floor(s / 3600))}:${p(Math.floor(s / 60) % 60)}:${p(s % 60)}:${p(ff)}`;
}

function showTimeText(ms) {
  return timePref() === "seconds" ? fmt(ms) : timecode(ms);
}

// A typed time: HH:MM:SS:FF (or ; before the frames), or [[h:]m:]s[.mmm]; null when it is neither.
function parseTime(text) {
  const t = text.trim().replace(",", ".");
  let m = /^(\d+):(\d{1,2}):(\d{1,2})[:;](\d{1,2})$/.exec(t);
  if (m) {
    const fr = state.data?.job?.frameRate ?? { num: 25, den: 1 };
    const base = nominalFps();
    const [h, mi, s, f] = m.slice(1).map(Number);
    if (mi > 59 || s > 59 || f >= base) return null;
    return Math.round((((h * 3600 + mi * 60 + s) * base + f) * fr.den * 1000) / fr.num);
  }
  m = /^(?:(\d+):)?(?:(\d+):)?(\d+(?:\.\d*)?)$/.exec(t);
  if (!m) return null;
  const parts = m.slice(1).filter((x) => x !== undefined).map(Number);
  const secs = parts.reduce((acc, v) => acc * 60 + v, 0);
  return Math.round(secs * 1000);
}

// Characters per second as the quality check counts them: the characters of the lines, a line
// break counting as one.
function cps(cue) {
  const chars = cue.lines.reduce((n, l) => n + [...l].length, 0) + Math.max(1, cue.lines.length) - 1;
  const secs = (cue.end - cue.start) / 1000;
  return secs > 0 ? chars / secs : Infinity;
}

// The selected cue's times as text fields, its duration and reading pace (under the list).
const cuebar = (() => {
  const bar = el("div", { class: "cuebar", id: "cuebar" });
  const field = (id, label) => {
    const input = el("input", { id, class: "time", autocomplete: "off", spellcheck: false });
    input.setAttribute("aria-label", label);
    return el("label", {}, `${label} `, input);
  };
  const format = el("select", { id: "time-format" });
  format.setAttribute("aria-label", "Time format");
  format.append(el("option", { value: "timecode", text: "HH:MM:SS:FF" }), el("option", { value: "seconds", text: "m:ss.mmm" }));
  bar.append(
    el("strong", { id: "cue-label" }),
    field("cue-start", "Start"),
    field("cue-end", "End"),
    field("cue-duration", "Duration"),
    el("span", { id: "cue-cps", class: "cps" }),
    format,
  );
  $("wave").before(bar);
  format.value = timePref();
  format.addEventListener("change", () => {
    try {
      localStorage.setItem("cuecraft-time-format", format.value);
    } catch {
      // The choice lasts for this page only.
    }
    renderCues();
    updateCuebar();
  });
  const typed = (id, f) =>
    $(id).addEventListener("change", () => {
      const ms = parseTime($(id).value);
      if (ms === null) {
        problem(`“${$(id).value}” is not a time: type HH:MM:SS:FF or seconds (1:02.5).`);
        return updateCuebar();
      }
      f(ms);
    });
  typed("cue-start", (ms) => ops.setTime(state.cue, "start", timeline.snap(ms)));
  typed("cue-end", (ms) => ops.setTime(state.cue, "end", timeline.snap(ms)));
  typed("cue-duration", (ms) => {
    const cue = currentCue();
    if (cue) ops.setTime(state.cue, "end", timeline.snap(cue.start + ms));
  });
  return bar;
})();

function durationText(ms) {
  return timePref() === "seconds" ? (ms / 1000).toFixed(3) : timecode(ms);
}

function updateCuebar() {
  const cue = currentCue();
  cuebar.hidden = !cue;
  if (!cue) return;
  $("cue-label").textContent = `Cue ${cue.index}`;
  for (const [id, v] of [
    ["cue-start", showTimeText(cue.start)],
    ["cue-end", showTimeText(cue.end)],
    ["cue-duration", durationText(cue.end - cue.start)],
  ]) {
    if (document.activeElement !== $(id)) $(id).value = v;
  }
  $("cue-cps").textContent = `${cps(cue).toFixed(1)} CPS`;
}

// The cue at the player's time drawn over the picture with its own line breaks (over the
// timeline for an audio job).
const subtitle = el("div", { class: "subtitle", id: "subtitle" });
subtitle.hidden = true;
let subtitleShown = null;

function showSubtitle(ms) {
  const cues = state.data?.cues ?? [];
  const k = cueAt(ms);
  const cue = k >= 0 ? cues[k] : null;
  const key = cue ? `${cue.start}|${cue.lines.join("\n")}` : null;
  if (key === subtitleShown) return;
  subtitleShown = key;
  subtitle.replaceChildren(...(cue ? cue.lines.map((l) => el("span", { text: l })) : []));
  subtitle.hidden = !cue;
  subtitle.dataset.cue = cue ? String(cue.index) : "";
}

// The cue showing at ms (-1 when none).
function cueAt(ms) {
  const cues = state.data?.cues ?? [];
  let lo = 0;
  let hi = cues.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cues[mid].start <= ms) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && ms < cues[found].end ? found : -1;
}

// ----- edits --------------------------------------------------------------------------------

async function post(path, body) {
  if (state.busy) return null;
  state.busy = true;
  state.saving = true;
  saveState("Saving…", "saving");
  try {
    const resp = await fetch(`/editor/${jobId}/${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ transcript: state.transcript, revision: state.revision, ...body }),
    });
    const json = await resp.json().catch(() => ({}));
    if (resp.status === 409) {
      showConflict(json.revision);
      saveState("Not saved: someone else saved first", "failed");
      return null;
    }
    if (!resp.ok) {
      const msg = json.error ?? `The change was refused (${resp.status}).`;
      // A refusal ("not found", a time a rule holds, an operation that changes nothing) is an
      // answer, shown as a notice; nothing was saved.
      if (resp.status === 400) {
        problem(null);
        info(msg);
      } else problem(msg);
      if (state.editing) saveState(`Not saved: cue ${state.editing.index}, your text is kept`, "failed");
      else savedState();
      return null;
    }
    problem(null);
    return json;
  } catch (e) {
    problem("The server could not be reached; the change was not saved.");
    saveState(state.editing ? `Not saved: cue ${state.editing.index}, your text is kept` : "Not saved: no connection", "failed");
    return null;
  } finally {
    state.busy = false;
    state.saving = false;
  }
}

function info(text) {
  $("notice").textContent = text ?? "";
  $("notice").hidden = !text;
}

function showConflict(revision) {
  $("conflict-rev").textContent = String(revision ?? "?");
  const draft = readDraft();
  const kept = $("conflict-kept") ?? el("span", { id: "conflict-kept" });
  kept.textContent = draft ? ` Your text for cue ${draft.index} is kept.` : "";
  $("conflict-reload").before(kept, " ");
  $("conflict-reload").textContent = draft ? "Load their version and re-apply my text" : "Load their version";
  $("conflict").hidden = false;
  state.conflict = true;
}

async function edit(op, onSaved = null) {
  const before = state.revision;
  const data = await post("edit", { ...op, answer: "patch" });
  if (!data) return false;
  onSaved?.();
  state.undo.push(before);
  state.redo = [];
  keepSelection(() => apply(data));
  if (op.op === "text" || op.op === "replace") offerCarry(data);
  return true;
}

// Versions in sync (issue 22, item 7): a text edit of the original offers itself to the clean
// version, where the server makes it on the same words (or says why it cannot).
function offerCarry(data) {
  const clean = data.transcript?.kind === "original" && data.transcripts?.find((t) => t.kind === "clean");
  $("carry").hidden = !clean;
  if (!clean) return;
  state.carry = { transcript: clean.id, revision: clean.revision, sourceRevision: data.transcript.revision };
  $("carry-text").textContent = `Make the same change in ${clean.label ?? "the clean version"}?`;
}

async function carry() {
  const c = state.carry;
  $("carry").hidden = true;
  if (!c) return;
  state.carry = null;
  const done = await post("edit", { transcript: c.transcript, revision: c.revision, op: "carry", sourceRevision: c.sourceRevision });
  savedState();
  if (done) info(`Made the same change in the clean version (its revision ${done.transcript?.revision}).`);
}

async function restoreTo(revision, note) {
  const current = state.revision;
  const data = await post("restore", { restore: revision, note, answer: "patch" });
  if (!data) return false;
  if (note === "undo") state.redo.push(current);
  else if (note === "redo") state.undo.push(current);
  else {
    state.undo.push(current);
    state.redo = [];
  }
  keepSelection(() => apply(data));
  return true;
}

function keepSelection(f) {
  const { cue, word } = state;
  f();
  state.cue = Math.min(cue, Math.max(0, state.data.cues.length - 1));
  state.word = word;
  selectCue(state.cue, document.activeElement?.closest?.("li.cue") != null || document.activeElement === document.body);
}

function updateUndo() {
  $("undo").disabled = state.undo.length === 0;
  $("redo").disabled = state.redo.length === 0;
}

function currentCue() {
  return state.data?.cues[state.cue];
}

// ----- the cue text box -------------------------------------------------------------------------

const draftKey = `cuecraft-draft:${jobId}`;

// The typed text is kept in the tab's session storage until the server has it: a reload or a
// crashed and restored tab brings it back (see restoreDraft). Per tab, so two tabs on the same
// project never take each other's drafts.
function writeDraft() {
  const ed = state.editing;
  if (!ed) return;
  const { from, to, index, start, original } = ed;
  const draft = { transcript: state.transcript, revision: state.revision, from, to, index, start, original, text: ed.area.value };
  try {
    if (ed.area.value === original) sessionStorage.removeItem(draftKey);
    else sessionStorage.setItem(draftKey, JSON.stringify(draft));
  } catch {
    // Storage full or refused: the beforeunload guard still asks.
  }
}

function readDraft() {
  try {
    const d = JSON.parse(sessionStorage.getItem(draftKey) ?? "null");
    return d && d.transcript === state.transcript ? d : null;
  } catch {
    return null;
  }
}

function clearDraft() {
  try {
    sessionStorage.removeItem(draftKey);
  } catch {
    // Nothing to clear.
  }
}

// The character offset of the n-th word of a cue's text.
function wordOffset(text, n) {
  const re = /\S+/g;
  let m;
  let i = 0;
  while ((m = re.exec(text))) {
    if (i++ === n) return m.index;
  }
  return text.length;
}

// How many words of the text end at or before the caret: the caret's word is the next one.
function wordsBefore(text, caret) {
  let n = 0;
  for (const m of text.matchAll(/\S+/g)) if (m.index + m[0].length <= caret) n++;
  return n;
}

function startEditing(k, text = null, atWord = null) {
  const cue = state.data.cues[k];
  const li = document.querySelector(`li.cue[data-k="${k}"]`);
  if (!cue || !li) return;
  if (li.querySelector("textarea")) return li.querySelector("textarea").focus();
  const original = cueText(cue);
  const area = el("textarea", { spellcheck: true, value: text ?? original });
  area.setAttribute("aria-label", `Text of cue ${cue.index}`);
  li.querySelector(".text").hidden = true;
  li.classList.add("editing");
  li.append(area);
  state.editing = { k, from: cue.from, to: cue.to, index: cue.index, start: cue.start, original, area, li };
  area.focus();
  // The caret at the word that was clicked (or the selected word), else at the end.
  const w = atWord ?? state.word;
  const at = w !== null && w >= cue.from && w < cue.to && text === null ? wordOffset(area.value, w - cue.from) : area.value.length;
  area.setSelectionRange(at, at);
  savedState();
  area.addEventListener("input", () => {
    writeDraft();
    savedState();
  });
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      e.stopPropagation();
      serial(async () => {
        if (await commitText()) selectCue(state.cue);
      });
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      cancelEditing();
    }
    // Every other key goes on to the page's shortcuts (play, replay, split...), which commit
    // the text first where they change the transcript.
  });
  // Leaving the box (Tab, a click on another cue or a button) commits it.
  area.addEventListener("blur", () => serial(commitText));
}

function closeEditor() {
  const ed = state.editing;
  state.editing = null;
  if (!ed) return;
  ed.area.remove();
  ed.li.classList.remove("editing");
  const t = ed.li.querySelector(".text");
  if (t) t.hidden = false;
}

// Escape: the subtitler asked to throw the typed text away.
function cancelEditing() {
  const ed = state.editing;
  if (!ed) return;
  const focused = document.activeElement === ed.area;
  closeEditor();
  clearDraft();
  savedState();
  if (focused) ed.li.focus();
}

// Saves the open text box, if any. True when there is nothing left unsaved (no box, an unchanged
// text, or a saved one); false when the save failed: the box stays open with the typed text.
async function commitText() {
  const ed = state.editing;
  if (!ed || !ed.area.isConnected) {
    state.editing = null;
    return true;
  }
  const text = ed.area.value;
  if (state.conflict) {
    // Someone else saved first: nothing is saved over their version until it is loaded.
    saveState(`Not saved: cue ${ed.index}, your text is kept; load their version first`, "failed");
    return false;
  }
  if (text.trim().replace(/\s+/g, " ") === ed.original) {
    const focused = document.activeElement === ed.area;
    closeEditor();
    clearDraft();
    savedState();
    if (focused) ed.li.focus();
    return true;
  }
  const focused = document.activeElement === ed.area;
  const caretWord = wordsBefore(text, ed.area.selectionStart);
  ed.area.readOnly = true;
  saveState(`Saving cue ${ed.index}…`, "saving");
  const op = { op: "text", from: ed.from, to: ed.to, text };
  const ok = await edit(op, () => {
    // The answer re-renders the cue: the box goes with it.
    if (state.editing === ed) state.editing = null;
  });
  ed.area.readOnly = false;
  if (!ok) {
    if (ed.area.isConnected) state.editing = ed;
    writeDraft();
    return false;
  }
  clearDraft();
  // The word the caret was at is the selected word: split and line break act there.
  const cue = state.data.cues[ed.k];
  if (cue && caretWord > 0 && caretWord < cue.to - cue.from) {
    state.word = cue.from + caretWord;
    markSelection();
  }
  if (focused) document.querySelector(`li.cue[data-k="${ed.k}"]`)?.focus();
  return true;
}

// After a reload or a conflict: the text typed and not saved is opened again in its cue (the
// same words when the transcript did not change; else the cue at the same time), for the
// subtitler to save with Enter or drop with Escape.
function restoreDraft() {
  const d = readDraft();
  if (!d || state.editing) return;
  const cues = state.data.cues ?? [];
  let k = d.revision === state.revision ? cues.findIndex((c) => c.from === d.from && c.to === d.to) : -1;
  if (k < 0) {
    k = cues.findIndex((c) => c.end > d.start);
    if (k < 0) k = cues.length - 1;
  }
  if (k < 0) return;
  selectCue(k, false);
  startEditing(k, d.text);
  info(`Your unsaved text for cue ${d.index} is back in its box: Enter saves it, Escape drops it.`);
}

// ----- confirmation -----------------------------------------------------------------------------

function confirmBox(message, ok = "Go ahead") {
  let dlg = $("confirm");
  if (!dlg) {
    dlg = el("dialog", { id: "confirm", class: "confirm" });
    dlg.setAttribute("aria-labelledby", "confirm-text");
    dlg.append(
      el("p", { id: "confirm-text" }),
      el("div", { class: "actions" }, el("button", { type: "button", id: "confirm-ok" }), el("button", { type: "button", id: "confirm-cancel", text: "Cancel" })),
    );
    root.append(dlg);
  }
  $("confirm-text").textContent = message;
  $("confirm-ok").textContent = ok;
  return new Promise((resolve) => {
    const done = (v) => {
      $("confirm-ok").onclick = null;
      $("confirm-cancel").onclick = null;
      dlg.onclose = null;
      if (dlg.open) dlg.close();
      resolve(v);
    };
    $("confirm-ok").onclick = () => done(true);
    $("confirm-cancel").onclick = () => done(false);
    dlg.onclose = () => done(false);
    dlg.showModal();
    $("confirm-cancel").focus();
  });
}

const ops = {
  split() {
    const cue = currentCue();
    if (!cue) return;
    const at = state.word ?? cue.from;
    if (at <= cue.from) return problem("Select a word after the first of the cue to split before it.");
    return edit({ op: "split", at });
  },
  merge() {
    const next = state.data.cues[state.cue + 1];
    if (!next) return;
    return edit({ op: "merge", at: next.from });
  },
  linebreak() {
    const cue = currentCue();
    if (!cue) return;
    const at = state.word ?? cue.from;
    if (at <= cue.from) return problem("Select a word after the first of the cue to break the line before it.");
    return edit({ op: "linebreak", at });
  },
  movelast() {
    const cue = currentCue();
    if (!cue || !state.data.cues[state.cue + 1]) return problem("There is no next cue to move the word to.");
    return edit({ op: "movelast", at: cue.to });
  },
  movefirst() {
    const cue = currentCue();
    if (!cue || !state.data.cues[state.cue + 1]) return problem("There is no next cue to take a word from.");
    return edit({ op: "movefirst", at: cue.to });
  },
  // Lays cues [a, b] (1-based, inclusive) out again under the settings, after a confirmation
  // that says how many cues will change (the server's dry run).
  async relayout(a, b) {
    const cues = state.data?.cues ?? [];
    if (!cues.length) return;
    a = Math.max(1, Math.min(a, cues.length));
    b = Math.max(a, Math.min(b, cues.length));
    const range = { op: "relayout", from: cues[a - 1].from, to: cues[b - 1].to };
    const preview = await post("edit", { ...range, dryRun: true });
    if (!preview) return;
    savedState();
    const what = a === 1 && b === cues.length ? "all cues" : a === b ? `cue ${a}` : `cues ${a} to ${b}`;
    if (preview.changes === 0) return info(`Laying out ${what} again changes nothing.`);
    const ok = await confirmBox(
      `Lay out ${what} again under the layout settings? ${preview.changes} cue${preview.changes === 1 ? "" : "s"} will change (${b - a + 1} now, ${preview.after - preview.cues + b - a + 1} after). Undo brings them back.`,
      `Change ${preview.changes} cue${preview.changes === 1 ? "" : "s"}`,
    );
    if (!ok) return;
    return edit(range);
  },
  async speaker(everywhere) {
    const cue = currentCue();
    const speaker = Number($("speaker").value);
    if (!cue) return;
    if (everywhere) {
      const n = state.data.cues.filter((c) => c.speaker === cue.speaker).length;
      const ok = await confirmBox(`Make every cue of speaker ${cue.speaker} speaker ${speaker}? That changes ${n} cues (undo brings them back).`, `Change ${n} cues`);
      if (!ok) return;
    }
    return edit({ op: "speaker", from: cue.from, to: cue.to, speaker, everywhere });
  },
  async replace(find, replace) {
    const found = findMatches(find);
    const n = found.length;
    if (n === 0) return info(`“${find}” was not found.`);
    const places = `${n} ${n === 1 ? "place" : "places"}`;
    const what = replace === "" ? `Delete “${find}” in ${places}? The replacement is empty.` : `Replace “${find}” with “${replace}” in ${places}?`;
    // The preview: the words each match touches as they are and as they will be, by cue (the
    // first 12).
    const lines = found.slice(0, 12).map((m) => `Cue ${m.cue.index}: ${m.before} → ${m.after(replace) || "(nothing)"}`);
    if (n > 12) lines.push(`… and ${n - 12} more`);
    if (!(await confirmBox(`${what}\n\n${lines.join("\n")}`, replace === "" ? `Delete in ${n}` : `Replace in ${n}`))) return;
    return edit({ op: "replace", find, replace, ...findOptions() });
  },
  // Moves a cue's edge to `ms` (a drag on the timeline, a typed time, the playhead): one
  // revision; a neighbour in the way moves to keep the gap, or the server refuses and says why.
  async setTime(k, edge, ms) {
    const cue = state.data.cues[k];
    if (!cue) return;
    state.cue = k;
    markSelection();
    if (Math.round(ms) === cue[edge]) return updateCuebar();
    const ok = await edit({ op: "settime", from: cue.from, to: cue.to, edge, time: Math.max(0, Math.round(ms)) });
    if (!ok) updateCuebar();
    return ok;
  },
  // Start or end of the selected cue at the playhead.
  atPlayhead(edge) {
    const cue = currentCue();
    if (cue && state.media) return raw.setTime(state.cue, edge, timeline.snap(state.media.currentTime * 1000));
  },
  // A warning's one-click fix on cue k.
  fix(k, kind) {
    const cue = state.data.cues[k];
    if (!cue) return;
    state.cue = k;
    markSelection();
    if (kind === "movelast") return raw.movelast();
    const w = cue.warnings.find((x) => x.rule === "reading-pace");
    const pace = w && paceOf(w);
    if (!pace) return;
    // What the quality check counts: the lines' characters, a line break as one.
    const chars = cue.lines.reduce((n, l) => n + [...l].length, 0) + Math.max(1, cue.lines.length) - 1;
    const fr = state.data?.job?.frameRate ?? { num: 25, den: 1 };
    const frames = Math.ceil(((cue.start + Math.ceil((chars * 1000) / pace)) * fr.num) / (fr.den * 1000) - 1e-9);
    return raw.setTime(k, "end", Math.ceil((frames * fr.den * 1000) / fr.num));
  },
  undo() {
    const rev = state.undo.pop();
    if (rev !== undefined) return restoreTo(rev, "undo").then((ok) => ok || state.undo.push(rev));
  },
  redo() {
    const rev = state.redo.pop();
    if (rev !== undefined) return restoreTo(rev, "redo").then((ok) => ok || state.redo.push(rev));
  },
  async restore(revision) {
    if (!(await confirmBox(`Bring back the transcript as it was at revision ${revision}? This is saved as a new revision; undo returns to this one.`, `Restore revision ${revision}`))) return;
    return restoreTo(revision, "restore");
  },
};
// Each operation commits the open text box first and runs after the one before it.
const raw = { ...ops };
for (const name of Object.keys(ops)) ops[name] = act(raw[name]);

// Nudges of one cue edge pressed in a row are one revision: the edge moves on screen at once and
// the run is sent as one nudge of n frames when the presses pause for NUDGE_FOLD_MS, or before
// anything else the subtitler does (docs/decisions/editor.md, "Direct timing").
const NUDGE_FOLD_MS = 700;
let pendingNudge = null; // {k, edge, frames, base, timer}

ops.nudge = (edge, frames) => {
  const cue = currentCue();
  if (!cue) return;
  let p = pendingNudge;
  if (!p || p.k !== state.cue || p.edge !== edge) {
    if (p) {
      clearTimeout(p.timer);
      pendingNudge = null;
      serial(() => sendNudge(p));
    }
    p = pendingNudge = { k: state.cue, edge, frames: 0, base: cue[edge], index: cue.index };
  }
  clearTimeout(p.timer);
  p.frames += frames;
  p.timer = setTimeout(() => {
    if (pendingNudge === p) {
      pendingNudge = null;
      serial(() => sendNudge(p));
    }
  }, NUDGE_FOLD_MS);
  showPendingNudge(p);
};

function showPendingNudge(p) {
  const at = p.base + p.frames * frameMs();
  const id = p.edge === "start" ? "cue-start" : "cue-end";
  if (state.cue === p.k) $(id).value = showTimeText(at);
  const n = Math.abs(p.frames);
  saveState(`Cue ${p.index}: ${p.edge} ${p.frames < 0 ? "−" : "+"}${n} frame${n === 1 ? "" : "s"}, saved when you stop`, "unsaved");
}

// Sends a run of nudges (within `serial`); true when nothing is left unsent.
async function sendNudge(p) {
  if (!(await commitText())) return false;
  const cue = state.data.cues[p.k];
  if (!cue || p.frames === 0) {
    savedState();
    updateCuebar();
    return true;
  }
  const ok = await edit({ op: "nudge", from: cue.from, to: cue.to, edge: p.edge, frames: Math.max(-250, Math.min(250, p.frames)) });
  if (!ok) updateCuebar();
  return true;
}

// The pending run of nudges, sent before another action.
async function flushNudge() {
  const p = pendingNudge;
  if (!p) return true;
  pendingNudge = null;
  clearTimeout(p.timer);
  return sendNudge(p);
}

// ----- review at speed: problems, replay, find -------------------------------------------------

// The next (dir 1) or previous (-1) cue with a warning, from the selected one, wrapping.
function nextProblem(dir) {
  const cues = state.data?.cues ?? [];
  const n = cues.length;
  for (let step = 1; step <= n; step++) {
    const k = (((state.cue + dir * step) % n) + n) % n;
    if (cues[k].warnings.length > 0) {
      selectCue(k);
      seek(cues[k].start);
      return;
    }
  }
  info("No cue has a warning.");
}

$("problems-only").addEventListener("change", (e) => {
  $("cues").classList.toggle("problems-only", e.target.checked);
  const cue = currentCue();
  if (e.target.checked && cue && cue.warnings.length === 0) nextProblem(1);
});
$("next-problem").addEventListener("click", () => nextProblem(1));
$("prev-problem").addEventListener("click", () => nextProblem(-1));

// Starts playback. A play() that a pause() interrupts before the media has started (a double
// click on Play, a replayed cue shorter than the start-up) rejects with an AbortError: that is
// the pause the subtitler asked for, not a failure. Anything else is reported.
function startPlayback() {
  const started = state.media.play();
  if (started) {
    started.catch((e) => {
      if (e.name !== "AbortError") console.error(e);
    });
  }
}

// Replay the selected cue: from its start, pausing at its end.
let stopAt = null;
function replayCue() {
  const cue = currentCue();
  if (!cue || !state.media) return;
  seek(cue.start);
  stopAt = cue.end;
  startPlayback();
}

function back(ms) {
  if (!state.media) return;
  seek(Math.max(0, state.media.currentTime * 1000 - ms));
}

// Find: a phrase in the words' texts joined by one space (so across words and cues), "Match
// case" and "Whole words" as options: the server's rules (editor/find.rs), so the count, the
// highlight, find next and replace all's preview are what the server's replace changes. Each
// match's words are highlighted; Enter or "Find next" selects the next cue where one starts.
function findOptions() {
  return { caseSensitive: $("find-case").checked, wholeWord: $("find-whole").checked };
}

const wordChar = /[\p{Alphabetic}\p{N}]/u;

function foldChar(c, sensitive) {
  if (sensitive) return c;
  const l = c.toLowerCase();
  return Array.from(l).length === 1 ? l : c;
}

function findMatches(find) {
  const out = [];
  const { caseSensitive, wholeWord } = findOptions();
  const phrase = Array.from(find.split(/\s+/).filter(Boolean).join(" ")).map((c) => foldChar(c, caseSensitive));
  if (phrase.length === 0) return out;
  // The joined text: each character with its cue and word.
  const chars = [];
  const owner = [];
  const words = [];
  for (const c of state.data?.cues ?? []) {
    for (const w of c.words) {
      if (words.length) {
        chars.push(" ");
        owner.push(words.length - 1);
      }
      words.push({ cue: c, word: w });
      for (const ch of Array.from(w.text)) {
        chars.push(ch);
        owner.push(words.length - 1);
      }
    }
  }
  const folded = chars.map((c) => foldChar(c, caseSensitive));
  const m = phrase.length;
  const starts = [];
  let at = 0;
  for (const x of words) {
    starts.push(at);
    at += Array.from(x.word.text).length + 1;
  }
  for (let i = 0; i + m <= folded.length; ) {
    let hit = true;
    for (let k = 0; k < m && hit; k++) hit = folded[i + k] === phrase[k];
    if (hit && wholeWord) hit = (i === 0 || !wordChar.test(chars[i - 1])) && (i + m >= chars.length || !wordChar.test(chars[i + m]));
    if (!hit) {
      i++;
      continue;
    }
    const first = owner[i];
    const last = owner[i + m - 1];
    const from = starts[first];
    const to = starts[last] + Array.from(words[last].word.text).length;
    const [a, b] = [i, i + m];
    out.push({
      cue: words[first].cue,
      word: words[first].word,
      words: words.slice(first, last + 1).map((x) => x.word),
      before: chars.slice(from, to).join(""),
      after: (r) => (chars.slice(from, a).join("") + r + chars.slice(b, to).join("")).trim(),
    });
    i += m;
  }
  return out;
}

function updateFind() {
  const find = $("find").value;
  for (const s of document.querySelectorAll(".w.found")) s.classList.remove("found");
  const found = findMatches(find);
  if (!find.trim()) {
    $("find-count").textContent = "";
    return;
  }
  for (const m of found) for (const w of m.words) document.querySelector(`.w[data-i="${w.i}"]`)?.classList.add("found");
  const cues = new Set(found.flatMap((m) => m.words.map((w) => cueOfWord(w.i)))).size;
  $("find-count").textContent = found.length === 0 ? "no match" : `${found.length} in ${cues} cue${cues === 1 ? "" : "s"}`;
}

// The cue (its index) that shows word `i`.
function cueOfWord(i) {
  return state.data.cues.findIndex((c) => c.from <= i && i < c.to);
}

function findNext() {
  const find = $("find").value;
  const found = findMatches(find);
  if (!find.trim()) return;
  if (found.length === 0) return info(`“${find}” was not found.`);
  const cues = state.data.cues;
  const after = found.find((m) => m.cue.index - 1 > state.cue) ?? found[0];
  const k = after.cue.index - 1;
  state.word = after.word.i;
  selectCue(k, false);
  seek(after.word.start);
  info(`“${find}”: cue ${cues[k].index} (${found.length} in all).`);
}

$("find").addEventListener("input", updateFind);
$("find-case").addEventListener("change", updateFind);
$("find-whole").addEventListener("change", updateFind);

async function loadHistory() {
  if (!state.transcript) return;
  const resp = await fetch(`/editor/${jobId}/revisions?transcript=${state.transcript}`, {
    headers: { Accept: "application/json" },
  });
  if (!resp.ok) return;
  const { revisions } = await resp.json();
  const list = $("history");
  list.replaceChildren();
  if (revisions.length === 0) list.append(el("li", { text: "No edits yet: this is the transcript as recognised." }));
  for (const r of revisions) {
    const item = el("li", { "data-revision": String(r.revision) });
    item.append(`${r.revision}: ${r.note}${r.by ? ` — ${r.by}` : ""} `);
    item.append(el("br"), el("small", { text: r.at.replace("T", " ").slice(0, 19) }), " ");
    if (r.revision !== state.revision) {
      const b = el("button", { type: "button", text: "Restore" });
      b.setAttribute("aria-label", `Restore revision ${r.revision}`);
      b.addEventListener("click", () => ops.restore(r.revision));
      item.append(b);
    }
    list.append(item);
  }
}

// ----- layout settings ------------------------------------------------------------------------

const form = $("settings-form");

function fillSettings() {
  const st = state.data.settings;
  if (!st) return;
  for (const input of form.elements) {
    if (!input.name || !(input.name in st)) continue;
    if (input.type === "checkbox") input.checked = Boolean(st[input.name]);
    else input.value = String(st[input.name]);
  }
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  act(applySettings)();
});

async function applySettings() {
  const settings = {};
  for (const input of form.elements) {
    if (!input.name) continue;
    if (input.type === "checkbox") settings[input.name] = input.checked;
    else if (input.type === "number") settings[input.name] = Number(input.value);
    else settings[input.name] = input.value;
  }
  // A settings change is a revision of the transcript on screen: undo and restore bring the
  // settings back.
  const before = state.revision;
  const data = await post("settings", { settings });
  if (!data) return;
  if (data.transcript && data.transcript.revision !== before) {
    state.undo.push(before);
    state.redo = [];
  }
  keepSelection(() => apply(data));
  if (data.transcript && data.transcript.revision !== before && !data.notice) {
    info("Settings applied. Cues you have edited keep their segmentation: “Lay out all again” applies the new settings to every cue (it says how many change first).");
  }
}

// ----- translations ---------------------------------------------------------------------------

const tform = $("translate-form");
tform.addEventListener("submit", (e) => {
  e.preventDefault();
  act(addTranslation)();
});

async function addTranslation() {
  const body = {
    language: tform.elements.language.value,
    label: tform.elements.label.value,
    from: tform.elements.from.value,
  };
  const file = tform.elements.file.files[0];
  if (body.from === "file") {
    if (!file) return problem("Choose a subtitle file to import.");
    const bytes = new Uint8Array(await file.arrayBuffer());
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    body.file = { name: file.name, base64: btoa(bin) };
  }
  const data = await post("translations", body);
  if (data) {
    state.undo = [];
    state.redo = [];
    state.cue = 0;
    state.word = null;
    apply(data);
  }
}

// ----- playback and waveform ------------------------------------------------------------------

function frameMs() {
  const fr = state.data?.job?.frameRate;
  return fr && fr.num > 0 ? (1000 * fr.den) / fr.num : 40;
}

// The timeline takes the place of the page's waveform strip.
const timeline = (() => {
  const old = $("wave");
  const holder = el("div", { class: "timeline-holder" });
  old.replaceWith(holder);
  return new Timeline(holder, {
    cues: () => state.data?.cues ?? [],
    selected: () => state.cue,
    time: () => (state.media ? state.media.currentTime * 1000 : 0),
    duration: () => (state.data ? durationMs() : 0),
    frameMs,
    gapMs: () => (state.data?.settings?.minFramesBetweenSubtitles ?? 0) * frameMs(),
    shots: () => state.data?.job?.shotChanges ?? [],
    onSeek: (ms) => seek(ms),
    onSelect: (k, ms) => {
      state.word = null;
      selectCue(k, !document.activeElement?.closest?.("textarea"));
      seek(ms);
    },
    onEdge: (k, edge, ms) => ops.setTime(k, edge, ms),
    paintCue: (g, c, a, b, h) => speakers.paintCue(g, c, a, b, h), // speakers.js
  });
})();

function setupMedia() {
  timeline.setPeaks(state.data.peaks);
  timeline.layout();
  const m = state.data.media;
  if (state.media || !m) return;
  const media = m.kind === "video" ? el("video", { preload: "auto" }) : el("audio", { preload: "auto" });
  media.src = m.url;
  if (m.kind === "audio") media.hidden = true;
  $("picture").append(media);
  (m.kind === "video" ? $("picture") : document.querySelector(".timeline-holder")).append(subtitle);
  // The subtitle follows the frame on screen (requestVideoFrameCallback), not the audio clock.
  if (m.kind === "video" && media.requestVideoFrameCallback) {
    const onFrame = (_, meta) => {
      showSubtitle(meta.mediaTime * 1000);
      media.requestVideoFrameCallback(onFrame);
    };
    media.requestVideoFrameCallback(onFrame);
  }
  state.media = media;
  media.addEventListener("play", () => {
    $("play").textContent = "Pause";
    tick();
  });
  media.addEventListener("pause", () => ($("play").textContent = "Play"));
  media.addEventListener("timeupdate", () => showTime(media.currentTime * 1000));
  media.addEventListener("seeked", () => showTime(media.currentTime * 1000));
  media.addEventListener("loadedmetadata", () => timeline.layout());
}

function durationMs() {
  const d = state.media?.duration;
  if (d && Number.isFinite(d)) return d * 1000;
  const p = state.data.peaks;
  if (p?.levels?.length) return (p.levels[0] / p.perSecond) * 1000;
  return state.data.job.durationSeconds * 1000;
}

let lastCurrent = -1;
let lastWord = null;

function showTime(ms) {
  $("clock").textContent = showTimeText(ms);
  if (!(state.media?.requestVideoFrameCallback && state.data?.media?.kind === "video") || state.media.paused) showSubtitle(ms);
  const cues = state.data?.cues ?? [];
  // The last cue starting at or before ms (binary search), current while ms is before its end.
  let lo = 0;
  let hi = cues.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cues[mid].start <= ms) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  const current = found >= 0 && ms < cues[found].end ? found : -1;
  if (current !== lastCurrent) {
    document.querySelector("li.cue.current")?.classList.remove("current");
    if (current >= 0) {
      const li = document.querySelector(`li.cue[data-k="${current}"]`);
      li?.classList.add("current");
      if (state.media && !state.media.paused) li?.scrollIntoView({ block: "nearest" });
    }
    lastCurrent = current;
  }
  let word = null;
  if (found >= 0) {
    for (const w of cues[found].words) if (w.start <= ms && ms < Math.max(w.end, w.start + 1)) word = w.i;
  }
  if (word !== lastWord) {
    document.querySelector(".w.now")?.classList.remove("now");
    if (word !== null) document.querySelector(`.w[data-i="${word}"]`)?.classList.add("now");
    lastWord = word;
  }
  if (state.media && !state.media.paused) timeline.follow(ms);
  timeline.draw();
}

function tick() {
  if (!state.media || state.media.paused) return;
  if (stopAt !== null && state.media.currentTime * 1000 >= stopAt) {
    stopAt = null;
    state.media.pause();
  }
  showTime(state.media.currentTime * 1000);
  requestAnimationFrame(tick);
}

function togglePlay() {
  if (!state.media) return;
  stopAt = null;
  if (state.media.paused) startPlayback();
  else state.media.pause();
}

// ----- events ---------------------------------------------------------------------------------

$("cues").addEventListener("click", (e) => {
  const li = e.target.closest("li.cue");
  if (!li || e.target.closest("textarea")) return;
  const k = Number(li.dataset.k);
  const fix = e.target.closest("button.fix");
  if (fix) return ops.fix(k, fix.dataset.fix);
  const w = e.target.closest(".w");
  if (w?.dataset.i) {
    state.word = Number(w.dataset.i);
    seek(Number(w.dataset.start));
  } else {
    state.word = null;
    seek(state.data.cues[k].start);
  }
  selectCue(k);
});
$("cues").addEventListener("dblclick", (e) => {
  const li = e.target.closest("li.cue");
  if (li && !e.target.closest("textarea")) {
    const k = Number(li.dataset.k);
    const word = state.word;
    serial(() => startEditing(k, null, word));
  }
});
$("cues").addEventListener("focusin", (e) => {
  const li = e.target.closest("li.cue");
  if (li && Number(li.dataset.k) !== state.cue) {
    state.cue = Number(li.dataset.k);
    state.word = null;
    const cue = currentCue();
    if (cue) state.word = cue.from;
    markSelection();
  }
});
$("play").addEventListener("click", togglePlay);
$("undo").addEventListener("click", ops.undo);
$("redo").addEventListener("click", ops.redo);
$("split").addEventListener("click", ops.split);
$("merge").addEventListener("click", ops.merge);
$("linebreak").addEventListener("click", ops.linebreak);
$("movelast").addEventListener("click", () => ops.movelast());
$("movefirst").addEventListener("click", () => ops.movefirst());
$("relayout").addEventListener("click", () => ops.relayout(Number($("relayout-from").value), Number($("relayout-to").value)));
$("relayout-all").addEventListener("click", () => ops.relayout(1, state.data?.cues.length ?? 1));
$("start-minus").addEventListener("click", () => ops.nudge("start", -1));
$("start-plus").addEventListener("click", () => ops.nudge("start", 1));
$("end-minus").addEventListener("click", () => ops.nudge("end", -1));
$("end-plus").addEventListener("click", () => ops.nudge("end", 1));
$("speaker-cue").addEventListener("click", () => speakers.setSelection(Number($("speaker").value)));
$("speaker-all").addEventListener("click", () => ops.speaker(true));
// Enter in Find finds the next; Enter in "Replace with" (or the button) replaces all, after the
// preview.
$("find-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const find = $("find").value;
  if (!find) return;
  if (document.activeElement === $("replace")) ops.replace(find, $("replace").value);
  else findNext();
});
$("replace-all").addEventListener("click", () => {
  const find = $("find").value;
  if (find) ops.replace(find, $("replace").value);
});
$("transcript").addEventListener("change", (e) => {
  const to = e.target.value;
  serial(async () => {
    if (!(await commitText())) {
      e.target.value = state.transcript;
      return;
    }
    state.transcript = to;
    state.undo = [];
    state.redo = [];
    state.cue = 0;
    state.word = null;
    await load();
  });
});
// Their version is loaded; the text typed here (kept as a draft) opens again in its cue.
$("carry-apply").addEventListener("click", () => carry());
$("carry-dismiss").addEventListener("click", () => {
  state.carry = null;
  $("carry").hidden = true;
});
$("conflict-reload").addEventListener("click", () =>
  serial(async () => {
    $("conflict").hidden = true;
    state.conflict = false;
    state.undo = [];
    state.redo = [];
    closeEditor();
    await load();
  }),
);
window.addEventListener("beforeunload", (e) => {
  const ed = state.editing;
  if ((ed && ed.area.value !== ed.original) || state.saving || pendingNudge) {
    writeDraft();
    e.preventDefault();
    e.returnValue = "";
  }
});
$("help-open").addEventListener("click", () => $("help").showModal());
$("help-close").addEventListener("click", () => $("help").close());

// Shortcuts are matched on e.code (the key's place on the keyboard), so Alt+S is the same key on
// QWERTY, QWERTZ and AZERTY, and Option+S on macOS (whose e.key is "ß") still splits.
document.addEventListener("keydown", (e) => {
  const typing = e.target.closest?.("input, textarea, select");
  const code = e.code;
  if ((e.ctrlKey && code === "Space") || (e.altKey && !e.ctrlKey && code === "KeyP")) {
    e.preventDefault();
    return togglePlay();
  }
  if (code === "F8" && !e.ctrlKey && !e.altKey && !e.metaKey) {
    e.preventDefault();
    return nextProblem(e.shiftKey ? -1 : 1);
  }
  if ((e.ctrlKey || e.metaKey) && code === "KeyZ" && !typing) {
    e.preventDefault();
    return e.shiftKey ? ops.redo() : ops.undo();
  }
  if ((e.ctrlKey || e.metaKey) && code === "KeyY" && !typing) {
    e.preventDefault();
    return ops.redo();
  }
  if (e.altKey && !e.ctrlKey && !e.metaKey) {
    const actions = {
      ArrowDown: act(() => selectCue(state.cue + 1)),
      ArrowUp: act(() => selectCue(state.cue - 1)),
      KeyS: ops.split,
      KeyM: ops.merge,
      KeyL: ops.linebreak,
      KeyN: ops.movelast,
      KeyB: ops.movefirst,
      KeyR: replayCue,
      KeyJ: () => back(2000),
      KeyI: () => ops.atPlayhead("start"),
      KeyO: () => ops.atPlayhead("end"),
      BracketLeft: () => ops.nudge(e.shiftKey ? "end" : "start", -1),
      BracketRight: () => ops.nudge(e.shiftKey ? "end" : "start", 1),
    };
    if (actions[code]) {
      e.preventDefault();
      return actions[code]();
    }
  }
  if (typing || e.ctrlKey || e.altKey || e.metaKey) return;
  const cue = currentCue();
  const inList = e.target.closest?.("li.cue");
  if (e.key === "?") {
    e.preventDefault();
    return $("help").open ? $("help").close() : $("help").showModal();
  }
  switch (code) {
    case "KeyJ":
    case "ArrowDown":
      if (!inList && code === "ArrowDown") return;
      e.preventDefault();
      selectCue(state.cue + 1);
      if (currentCue()) seek(currentCue().start);
      return;
    case "KeyK":
    case "ArrowUp":
      if (!inList && code === "ArrowUp") return;
      e.preventDefault();
      selectCue(state.cue - 1);
      if (currentCue()) seek(currentCue().start);
      return;
    case "ArrowRight":
    case "ArrowLeft":
      if (!cue || !inList) return;
      e.preventDefault();
      state.word = Math.max(cue.from, Math.min(cue.to - 1, (state.word ?? cue.from) + (code === "ArrowRight" ? 1 : -1)));
      markSelection();
      seek(cue.words[state.word - cue.from].start);
      return;
    case "Home":
    case "End":
      if (!inList) return;
      e.preventDefault();
      selectCue(code === "Home" ? 0 : state.data.cues.length - 1);
      if (currentCue()) seek(currentCue().start);
      return;
    case "Enter":
    case "NumpadEnter":
      if (!inList) return;
      e.preventDefault();
      return serial(() => startEditing(state.cue));
    case "Equal":
    case "NumpadAdd":
      e.preventDefault();
      return timeline.zoom(1.5);
    case "Minus":
    case "NumpadSubtract":
      e.preventDefault();
      return timeline.zoom(1 / 1.5);
    case "Space":
      if (e.target.closest?.("button, a")) return;
      e.preventDefault();
      return togglePlay();
    default:
  }
});

// Speakers (speakers.js): names, colours, setting and merging speakers.
const speakers = new Speakers({ state, $, el, act, edit, post, apply, keepSelection, confirmBox, info, problem, currentCue });

load();
