// Speakers in the editor (issue 23 item 4): the project's speaker names, a colour per speaker on
// the cue list and the timeline (always beside the name: never colour alone), setting the speaker
// of the selected cue(s) or of a turn by key or control, merging two speakers, and the text
// transcript as the reader sees it, by speaker. editor.js calls the hooks below; every change is
// an ordinary edit (one revision, undoable) except a name, which is the project's.

// Colour classes spk-0 … spk-7 (app.css): each at least 4.5:1 against the list's and the
// timeline's backgrounds, so also >= 3:1 as non-text contrast. Speaker n takes n mod 8.
export const COLOURS = ["#1d4ed8", "#c2410c", "#15803d", "#7e22ce", "#0f766e", "#be185d", "#854d0e", "#475569"];

export class Speakers {
  // ctx: {state, $, el, act, edit, post, apply, keepSelection, confirmBox, info, problem, currentCue, markSelection}
  constructor(ctx) {
    this.ctx = ctx;
    this.range = null; // the selected cues, {a, b} positions (Shift+click), or null: the selected cue
    this.build();
    document.addEventListener("keydown", (e) => this.key(e));
    // Shift+click in the list selects from the selected cue to the clicked one (before
    // editor.js's click handler moves the selection).
    ctx.$("cues").addEventListener(
      "click",
      (e) => {
        const li = e.target.closest("li.cue");
        if (!li || e.target.closest("textarea, button")) return;
        const k = Number(li.dataset.k);
        if (e.shiftKey) {
          const a = this.range ? this.range.a : ctx.state.cue;
          this.range = { a, b: k };
          window.getSelection()?.removeAllRanges();
        } else this.range = null;
      },
      true,
    );
  }

  names() {
    return this.ctx.state.data?.speakers?.names ?? {};
  }

  name(n) {
    return this.names()[String(n)] ?? `Speaker ${n}`;
  }

  colour(n) {
    return COLOURS[n % COLOURS.length];
  }

  // The speakers of a cue, in the order they speak (two in a dashed cue).
  of(cue) {
    const out = [];
    for (const w of cue.words ?? []) if (w.speaker !== undefined && !out.includes(w.speaker)) out.push(w.speaker);
    return out.length ? out : [cue.speaker];
  }

  // Hook (renderCue): the label before a cue's text, each speaker's name in its colour with a
  // swatch, and the cue's class for the colour stripe.
  label(cue, li) {
    const { el } = this.ctx;
    const who = this.of(cue);
    li.classList.add(`spk-${who[0] % COLOURS.length}`);
    li.dataset.speaker = String(who[0]);
    const box = el("span", { class: "speaker" });
    who.forEach((s, n) => {
      if (n > 0) box.append(" / ");
      box.append(el("span", { class: `spk spk-${s % COLOURS.length}`, text: this.name(s), "data-speaker": String(s) }));
    });
    box.append(" · ");
    return box;
  }

  // Hook (markSelection): the cues of a Shift+click selection are marked.
  marked() {
    const cues = this.ctx.state.data?.cues ?? [];
    const [a, b] = this.bounds(cues.length);
    for (const li of document.querySelectorAll("li.cue")) {
      const k = Number(li.dataset.k);
      li.classList.toggle("in-range", this.range !== null && k >= a && k <= b);
    }
    const n = b - a + 1;
    this.ctx.$("speaker-cue").textContent = n > 1 ? `Set speaker for ${n} cues` : "Set speaker for cue";
  }

  bounds(count) {
    const cur = this.ctx.state.cue;
    if (!this.range || count === 0) return [cur, cur];
    const a = Math.max(0, Math.min(this.range.a, this.range.b, count - 1));
    const b = Math.min(count - 1, Math.max(this.range.a, this.range.b));
    return [a, b];
  }

  // Hook (timeline): under each cue box a band in its speaker's colour, with the name where
  // there is room.
  paintCue(g, c, a, b, h) {
    const who = this.of(c);
    const w = b - a;
    const band = 6;
    who.forEach((s, n) => {
      g.fillStyle = this.colour(s);
      const x0 = a + Math.round((w * n) / who.length);
      const x1 = a + Math.round((w * (n + 1)) / who.length);
      g.fillRect(x0, h - band, x1 - x0, band);
    });
    const label = who.map((s) => this.name(s)).join(" / ");
    const tw = g.measureText(label).width + 6;
    if (tw < w - 4) {
      g.fillStyle = "#fff";
      g.fillRect(a + 2, h - band - 16, tw, 15);
      g.fillStyle = this.colour(who[0]);
      g.fillText(label, a + 5, h - band - 14);
    }
  }

  // ----- the Speakers panel and the text transcript ---------------------------------------------

  build() {
    const { $, el } = this.ctx;
    const panel = el("details", { id: "speakers-panel", open: true });
    panel.append(
      el("summary", { text: "Speakers" }),
      el("ul", { id: "speaker-list", class: "speaker-list" }),
      el(
        "div",
        { class: "speaker-merge" },
        el("label", { text: "Merge " }, el("select", { id: "merge-from" })),
        el("label", { text: "into " }, el("select", { id: "merge-into" })),
        el("button", { type: "button", id: "merge-speakers", text: "Merge…" }),
      ),
      el(
        "div",
        { class: "speaker-redetect" },
        el(
          "label",
          { text: "Detect again with " },
          el("select", { id: "redetect-count" }, ...[1, 2, 3, 4, 5, 6, 7, 8].map((k) => el("option", { value: String(k), text: String(k) }))),
        ),
        el("span", { text: " speakers " }),
        el("button", { type: "button", id: "redetect-speakers", text: "Detect…", title: "From the audio; speakers you set stay" }),
      ),
    );
    const text = el("details", { id: "speaker-text-panel" });
    text.append(el("summary", { text: "Text transcript" }), el("div", { id: "speaker-text", class: "speaker-text" }));
    const aside = document.querySelector(".editor aside");
    aside.prepend(panel, text);
    $("merge-speakers").addEventListener("click", () => this.merge(Number($("merge-from").value), Number($("merge-into").value)));
    $("redetect-speakers").addEventListener("click", () => this.redetect(Number($("redetect-count").value)));
    text.addEventListener("toggle", () => this.renderText());
    // A "to the next speaker change" button beside the existing speaker controls.
    const turn = el("button", { type: "button", id: "speaker-turn", text: "… to next speaker change", title: "Shift+digit" });
    $("speaker-cue").after(turn);
    $("speaker-cue").title = "Digit 0–9 on the list";
    turn.addEventListener("click", () => this.setTurn(Number($("speaker").value)));
  }

  // Hook (apply): the panel and the text transcript follow the data.
  render() {
    const { $, el, state } = this.ctx;
    const used = state.data?.speakers?.used ?? [];
    const list = $("speaker-list");
    list.replaceChildren();
    for (const u of used) {
      const s = u.speaker;
      const input = el("input", { type: "text", class: "speaker-name", value: this.names()[String(s)] ?? "", placeholder: `Speaker ${s}`, maxLength: 60, "data-speaker": String(s) });
      input.setAttribute("aria-label", `Name of speaker ${s}`);
      input.addEventListener("change", () => this.rename(s, input.value));
      input.addEventListener("keydown", (e) => {
        if (e.code === "Enter" || e.code === "NumpadEnter") {
          e.preventDefault();
          input.blur();
        }
      });
      list.append(
        el(
          "li",
          { class: `spk-${s % COLOURS.length}`, "data-speaker": String(s) },
          el("span", { class: "swatch" }),
          el("span", { class: "num", text: String(s) }),
          input,
          el("span", { class: "count", text: `${u.words} words` }),
        ),
      );
    }
    for (const id of ["merge-from", "merge-into"]) {
      const sel = $(id);
      const was = sel.value;
      sel.replaceChildren(...used.map((u) => el("option", { value: String(u.speaker), text: `${u.speaker}: ${this.name(u.speaker)}` })));
      if (used.some((u) => String(u.speaker) === was)) sel.value = was;
    }
    if (used.length > 1 && $("merge-from").value === $("merge-into").value) $("merge-into").value = String(used[1].speaker);
    $("merge-speakers").disabled = used.length < 2;
    // The count offered first is the speakers there are now (until the person picks one).
    const count = $("redetect-count");
    if (!count.dataset.picked) count.value = String(Math.min(8, Math.max(1, used.length)));
    count.onchange = () => (count.dataset.picked = "1");
    this.renderText();
  }

  // The text transcript in the page: a paragraph per speaker turn, headed by the speaker's name.
  renderText() {
    const { $, el, state } = this.ctx;
    if (!$("speaker-text-panel").open) return;
    const box = $("speaker-text");
    box.replaceChildren();
    let para = null;
    let who = null;
    let words = [];
    const flush = () => {
      if (para) para.append(words.join(" "));
      words = [];
    };
    for (const cue of state.data?.cues ?? []) {
      for (const w of cue.words) {
        if (!w.text.trim()) continue;
        if (w.speaker !== who) {
          flush();
          who = w.speaker;
          para = el("p", { "data-speaker": String(who) });
          para.append(el("strong", { class: `spk spk-${who % COLOURS.length}`, text: `${this.name(who)}: ` }));
          box.append(para);
        }
        words.push(w.text);
      }
    }
    flush();
  }

  // ----- actions ----------------------------------------------------------------------------------

  rename(s, value) {
    const { act, post, apply, keepSelection } = this.ctx;
    return act(async () => {
      const data = await post("speakers", { names: { [String(s)]: value.trim() } });
      if (data) keepSelection(() => apply(data));
    })();
  }

  // The selected cues (Shift+click) or the selected cue get speaker s: one revision.
  setSelection(s) {
    const { act, edit, state } = this.ctx;
    return act(async () => {
      const cues = state.data?.cues ?? [];
      if (!cues.length) return;
      const [a, b] = this.bounds(cues.length);
      return edit({ op: "speaker", from: cues[a].from, to: cues[b].to, speaker: s });
    })();
  }

  // From the selected word (the cue's first when none) to the next speaker change.
  setTurn(s) {
    const { act, edit, state, currentCue } = this.ctx;
    return act(async () => {
      const cue = currentCue();
      if (!cue) return;
      const at = state.word !== null && state.word >= cue.from && state.word < cue.to ? state.word : cue.from;
      return edit({ op: "speakerturn", at, speaker: s });
    })();
  }

  merge(from, into) {
    const { act, edit, confirmBox, info, state } = this.ctx;
    return act(async () => {
      if (from === into) return info("Choose two different speakers to merge.");
      const cues = (state.data?.cues ?? []).filter((c) => this.of(c).includes(from)).length;
      const words = (state.data?.speakers?.used ?? []).find((u) => u.speaker === from)?.words ?? 0;
      const ok = await confirmBox(
        `Merge ${this.name(from)} into ${this.name(into)}? All ${words} words of ${this.name(from)} (in ${cues} cue${cues === 1 ? "" : "s"}) become ${this.name(into)}'s. Undo brings them back.`,
        `Merge into ${this.name(into)}`,
      );
      if (!ok) return;
      return edit({ op: "mergespeakers", speaker: from, into });
    })();
  }

  // The speakers found again from the audio with k speakers (one revision; the words a person
  // gave a speaker keep it).
  redetect(k) {
    const { act, edit, confirmBox } = this.ctx;
    return act(async () => {
      const ok = await confirmBox(
        `Detect the speakers again from the audio, with ${k} speaker${k === 1 ? "" : "s"}? Every word takes the speaker of its voice, except the words you gave a speaker. Undo brings the speakers of now back.`,
        `Detect ${k} speaker${k === 1 ? "" : "s"}`,
      );
      if (!ok) return;
      return edit({ op: "redetect", speakers: k });
    })();
  }

  // Digit 0–9 (top row or keypad) on the page, outside text boxes: the selected cue(s) get that
  // speaker; Shift+digit: from the selected word to the next speaker change. Read from e.code,
  // so the keys are the same on every keyboard layout.
  key(e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.target.closest?.("input, textarea, select, dialog")) return;
    const m = /^(?:Digit|Numpad)([0-9])$/.exec(e.code);
    if (!m) return;
    e.preventDefault();
    const s = Number(m[1]);
    this.ctx.$("speaker").value = String(s);
    return e.shiftKey ? this.setTurn(s) : this.setSelection(s);
  }
}
