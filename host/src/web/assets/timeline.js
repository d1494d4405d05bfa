// The editor's timeline: a zoomable, scrollable waveform with a time ruler (seconds, and frames
// when zoomed in), the cues as numbered boxes with visible edges, the selected cue highlighted,
// and the playhead. A cue's edge is dragged with the mouse (snapped to the job's frames, kept the
// minimum gap from its neighbours); the page decides what a drag, a click or a scroll does.
//
// The waveform is drawn from the server's peak pyramid (GET peaks?level=L&from=I&count=N): level 0
// has 50 values a second, each level above the largest of 4 below. For a view the timeline asks for
// the coarsest level with at least one value per pixel, in chunks of CHUNK values, only where the
// view is; a 3-hour file zooms and scrolls without the browser ever decoding audio.

const CHUNK = 2048;
const RULER = 20; // px, the ruler's height
const SHOT = "#7c3aed"; // shot changes (5.0:1 on the timeline's #eef1f6, 5.7:1 on the ruler's white)
const EDGE_GRAB = 5; // px either side of a cue edge that start a drag
const MAX_PX_PER_FRAME = 24;

export class Timeline {
  // host: the element the timeline is built in. opts: {cues(), selected(), time(), duration(),
  // frameMs(), gapMs(), shots() (the video's shot changes, ms, sorted), onSeek(ms),
  // onSelect(k, ms), onEdge(k, edge, ms), onView()}.
  constructor(host, opts) {
    this.opts = opts;
    this.scroller = document.createElement("div");
    this.scroller.className = "timeline";
    this.scroller.tabIndex = -1;
    this.spacer = document.createElement("div");
    this.spacer.className = "timeline-spacer";
    this.canvas = document.createElement("canvas");
    this.canvas.id = "wave";
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", "Timeline: the waveform and the cues. Click to seek, drag a cue's edge to move it.");
    this.spacer.append(this.canvas);
    this.scroller.append(this.spacer);
    host.append(this.scroller);
    this.pxPerMs = 0; // 0 until the first layout: then the default zoom
    this.peaks = null; // {url, perSecond, levels: [counts], factor}
    this.chunks = new Map(); // "level:chunk" -> Uint8Array | "pending"
    this.bytes = 0; // peak bytes fetched, for the benchmark
    this.requests = 0;
    this.drag = null;
    this.frames = 0; // frames drawn, for the benchmark
    this.pending = false;
    this.scroller.addEventListener("scroll", () => this.draw());
    this.scroller.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    this.canvas.addEventListener("pointerdown", (e) => this.down(e));
    this.canvas.addEventListener("pointermove", (e) => this.move(e));
    this.canvas.addEventListener("pointerup", (e) => this.up(e));
    this.canvas.addEventListener("pointercancel", () => {
      this.drag = null;
      this.draw();
    });
    new ResizeObserver(() => this.layout()).observe(this.scroller);
  }

  setPeaks(peaks) {
    if (!peaks || this.peaks?.url === peaks.url) return;
    this.peaks = { factor: 4, levels: [], ...peaks };
    this.chunks.clear();
    if (!peaks.levels) this.wholePeaks();
    this.draw();
  }

  // A server without the pyramid: level 0 whole, the levels above made here.
  async wholePeaks() {
    const r = await fetch(this.peaks.url);
    if (!r.ok) return;
    let level = new Uint8Array(await r.arrayBuffer());
    this.bytes += level.length;
    const levels = [];
    for (let l = 0; ; l++) {
      levels.push(level.length);
      for (let c = 0; c * CHUNK < level.length; c++) this.chunks.set(`${l}:${c}`, level.subarray(c * CHUNK, (c + 1) * CHUNK));
      if (level.length <= 1024) break;
      const up = new Uint8Array(Math.ceil(level.length / 4));
      for (let i = 0; i < level.length; i++) if (level[i] > up[i >> 2]) up[i >> 2] = level[i];
      level = up;
    }
    this.peaks.levels = levels;
    this.opts.onView?.();
    this.layout();
  }

  get width() {
    return this.scroller.clientWidth || 800;
  }

  get viewStart() {
    return this.scroller.scrollLeft / (this.pxPerMs || 1);
  }

  get viewEnd() {
    return this.viewStart + this.width / (this.pxPerMs || 1);
  }

  minPxPerMs() {
    const d = this.opts.duration();
    return d > 0 ? this.width / d : 0.01;
  }

  maxPxPerMs() {
    return MAX_PX_PER_FRAME / this.opts.frameMs();
  }

  // Sizes the scroll area to the media at the current zoom (a first call picks a zoom that shows
  // about 20 seconds, or the whole file when it is shorter).
  layout() {
    const d = this.opts.duration();
    if (!d) return this.draw();
    if (!this.pxPerMs) this.pxPerMs = Math.max(this.minPxPerMs(), Math.min(this.maxPxPerMs(), this.width / 20000));
    this.pxPerMs = Math.max(this.minPxPerMs(), Math.min(this.maxPxPerMs(), this.pxPerMs));
    this.spacer.style.width = `${Math.ceil(d * this.pxPerMs)}px`;
    this.draw();
  }

  // Zooms by `factor` keeping the time under x (px from the left of the view) where it is.
  zoom(factor, x = this.width / 2) {
    const at = this.viewStart + x / this.pxPerMs;
    this.pxPerMs = Math.max(this.minPxPerMs(), Math.min(this.maxPxPerMs(), this.pxPerMs * factor));
    this.spacer.style.width = `${Math.ceil(this.opts.duration() * this.pxPerMs)}px`;
    this.scroller.scrollLeft = at * this.pxPerMs - x;
    this.draw();
    this.opts.onView?.();
  }

  zoomAll() {
    this.zoom(this.minPxPerMs() / this.pxPerMs, 0);
  }

  // Shows [from, to] (scrolls only when part of it is out of view).
  reveal(from, to = from) {
    if (!this.pxPerMs) return;
    const span = this.viewEnd - this.viewStart;
    if (from >= this.viewStart && to <= this.viewEnd) return;
    const left = to - from < span * 0.8 ? from - span * 0.1 : from;
    this.scroller.scrollLeft = Math.max(0, left * this.pxPerMs);
  }

  // While playing, the view turns a page when the playhead reaches its right edge.
  follow(ms) {
    if (!this.pxPerMs) return;
    if (ms < this.viewStart || ms > this.viewEnd - (this.viewEnd - this.viewStart) * 0.05) {
      this.scroller.scrollLeft = Math.max(0, (ms - (this.viewEnd - this.viewStart) * 0.05) * this.pxPerMs);
    }
  }

  wheel(e) {
    if (e.ctrlKey || e.altKey || e.metaKey) {
      e.preventDefault();
      const r = this.scroller.getBoundingClientRect();
      // By how far the wheel turned, not per event: a mouse notch (100 px) zooms by 1.25, a
      // trackpad's small steps zoom smoothly, and events the browser coalesces under load
      // (one event of -200 for two notches) zoom as far as the notches they stand for.
      const px = e.deltaMode === 1 ? e.deltaY * 33 : e.deltaMode === 2 ? e.deltaY * 800 : e.deltaY;
      this.zoom(Math.min(4, Math.max(0.25, 1.25 ** (-px / 100))), e.clientX - r.left);
    } else if (Math.abs(e.deltaY) > Math.abs(e.deltaX)) {
      // The wheel scrolls the timeline sideways (the page scrolls outside it).
      e.preventDefault();
      this.scroller.scrollLeft += e.deltaY;
    }
  }

  // ----- pointer ------------------------------------------------------------------------------

  timeAt(e) {
    const r = this.canvas.getBoundingClientRect();
    return this.viewStart + (e.clientX - r.left) / this.pxPerMs;
  }

  // The cue edge within EDGE_GRAB px of the pointer: {k, edge}.
  edgeAt(e) {
    const r = this.canvas.getBoundingClientRect();
    if (e.clientY - r.top < RULER) return null;
    const t = this.timeAt(e);
    const grab = EDGE_GRAB / this.pxPerMs;
    const cues = this.opts.cues();
    let best = null;
    for (let k = this.first(t - grab); k < cues.length && cues[k].start <= t + grab; k++) {
      for (const edge of ["start", "end"]) {
        const d = Math.abs(cues[k][edge] - t);
        if (d <= grab && (!best || d < best.d)) best = { k, edge, d };
      }
    }
    return best;
  }

  // The first cue ending after ms.
  first(ms) {
    const cues = this.opts.cues();
    let lo = 0;
    let hi = cues.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cues[mid].end <= ms) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  snap(ms) {
    const f = this.opts.frameMs();
    return Math.round(Math.round(ms / f) * f);
  }

  // Where an edge may go: on the frame grid, at least a frame long, the minimum gap from the
  // neighbours.
  clampEdge(k, edge, ms) {
    const cues = this.opts.cues();
    const cue = cues[k];
    const f = this.opts.frameMs();
    const gap = this.opts.gapMs();
    let t = this.snap(ms);
    if (edge === "start") {
      const lo = k > 0 ? cues[k - 1].end + gap : 0;
      t = Math.min(Math.max(t, Math.ceil(lo)), cue.end - f);
    } else {
      const hi = k + 1 < cues.length ? cues[k + 1].start - gap : this.opts.duration();
      t = Math.max(Math.min(t, Math.floor(hi)), cue.start + f);
    }
    return Math.round(t);
  }

  down(e) {
    if (e.button !== 0) return;
    const hit = this.edgeAt(e);
    this.canvas.setPointerCapture(e.pointerId);
    this.drag = hit
      ? { kind: "edge", k: hit.k, edge: hit.edge, t: this.opts.cues()[hit.k][hit.edge], moved: false }
      : { kind: "click", x: e.clientX, scroll: this.scroller.scrollLeft, moved: false };
    e.preventDefault();
  }

  move(e) {
    if (!this.drag) {
      this.canvas.style.cursor = this.edgeAt(e) ? "ew-resize" : "pointer";
      return;
    }
    if (this.drag.kind === "edge") {
      const t = this.clampEdge(this.drag.k, this.drag.edge, this.timeAt(e));
      this.drag.moved ||= t !== this.opts.cues()[this.drag.k][this.drag.edge];
      this.drag.t = t;
      this.draw();
    } else if (Math.abs(e.clientX - this.drag.x) > 3 || this.drag.moved) {
      // Dragging the waveform pans it.
      this.drag.moved = true;
      this.scroller.scrollLeft = this.drag.scroll - (e.clientX - this.drag.x);
    }
  }

  up(e) {
    const d = this.drag;
    this.drag = null;
    if (!d) return;
    if (d.kind === "edge") {
      if (d.moved && d.t !== this.opts.cues()[d.k][d.edge]) this.opts.onEdge(d.k, d.edge, d.t);
      else this.opts.onSelect(d.k, this.opts.cues()[d.k][d.edge]);
      this.draw();
      return;
    }
    if (d.moved) return;
    const t = Math.max(0, this.timeAt(e));
    const cues = this.opts.cues();
    const k = this.first(t);
    if (k < cues.length && cues[k].start <= t) this.opts.onSelect(k, t);
    else this.opts.onSeek(t);
  }

  // ----- peaks --------------------------------------------------------------------------------

  // The coarsest level with at least one value per pixel (level 0 when zoomed in further).
  level() {
    const p = this.peaks;
    if (!p || !p.levels.length) return -1;
    const pxPerSecond = this.pxPerMs * 1000;
    let level = 0;
    for (let l = 1; l < p.levels.length; l++) {
      if (p.perSecond / p.factor ** l >= pxPerSecond) level = l;
    }
    return level;
  }

  chunk(level, c) {
    const key = `${level}:${c}`;
    const have = this.chunks.get(key);
    if (have instanceof Uint8Array) return have;
    if (have === undefined) {
      this.chunks.set(key, "pending");
      this.requests++;
      fetch(`${this.peaks.url}?level=${level}&from=${c * CHUNK}&count=${CHUNK}`)
        .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(String(r.status)))))
        .then((b) => {
          this.bytes += b.byteLength;
          this.chunks.set(key, new Uint8Array(b));
          this.draw();
        })
        .catch(() => this.chunks.delete(key));
    }
    return null;
  }

  // The largest peak of [a, b) at `level` (-1 when not loaded yet).
  peak(level, a, b) {
    let max = -1;
    for (let i = a; i < b; ) {
      const c = Math.floor(i / CHUNK);
      const data = this.chunk(level, c);
      const end = Math.min(b, (c + 1) * CHUNK);
      if (data) {
        for (let j = i - c * CHUNK; j < end - c * CHUNK && j < data.length; j++) if (data[j] > max) max = data[j];
      }
      i = end;
    }
    return max;
  }

  // ----- drawing ------------------------------------------------------------------------------

  draw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.paint();
    });
  }

  paint() {
    const canvas = this.canvas;
    const w = this.width;
    const h = canvas.clientHeight || 120;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.width = `${w}px`;
    }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    this.frames++;
    const total = this.opts.duration();
    if (!total || !this.pxPerMs) return;
    const t0 = this.viewStart;
    const t1 = this.viewEnd;
    // The view, for tests and the benchmark (where a time is on screen).
    canvas.dataset.viewStart = String(t0);
    canvas.dataset.pxPerMs = String(this.pxPerMs);
    canvas.dataset.level = String(this.level());
    const x = (ms) => (ms - t0) * this.pxPerMs;
    g.fillStyle = "#eef1f6";
    g.fillRect(0, RULER, w, h - RULER);
    this.paintCueFills(g, x, t0, t1, h);
    this.paintWave(g, w, h, t0);
    const shots = this.visibleShots(t0, t1);
    this.paintShots(g, x, shots, h);
    this.paintCueEdges(g, x, t0, t1, h);
    this.paintRuler(g, w, t0, t1);
    this.paintShotMarks(g, x, shots);
    const now = this.opts.time();
    if (now >= t0 && now <= t1) {
      g.fillStyle = "#b91c1c";
      g.fillRect(Math.round(x(now)) - 1, 0, 2, h);
    }
  }

  visibleCues(t0, t1, f) {
    const cues = this.opts.cues();
    for (let k = this.first(t0); k < cues.length && cues[k].start < t1; k++) {
      const c = cues[k];
      const drag = this.drag?.kind === "edge" && this.drag.k === k ? this.drag : null;
      f(k, drag?.edge === "start" ? drag.t : c.start, drag?.edge === "end" ? drag.t : c.end, c);
    }
  }

  paintCueFills(g, x, t0, t1, h) {
    const sel = this.opts.selected();
    this.visibleCues(t0, t1, (k, s, e) => {
      g.fillStyle = k === sel ? "rgba(217, 119, 6, 0.28)" : "rgba(36, 88, 214, 0.16)";
      g.fillRect(x(s), RULER, x(e) - x(s), h - RULER);
    });
  }

  // The shot changes in [t0, t1] (the video's, ms, sorted).
  visibleShots(t0, t1) {
    const shots = this.opts.shots?.() ?? [];
    let lo = 0;
    let hi = shots.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (shots[mid] < t0) lo = mid + 1;
      else hi = mid;
    }
    let end = lo;
    while (end < shots.length && shots[end] <= t1) end++;
    return shots.slice(lo, end);
  }

  // Shot changes: a thin violet line from the ruler down, over the waveform and under the cues'
  // edges (which stay readable)...
  paintShots(g, x, shots, h) {
    g.fillStyle = SHOT;
    for (const t of shots) g.fillRect(Math.round(x(t)), RULER, 1, h - RULER);
  }

  // ... and a violet mark on the ruler above it, which no cue covers: a cue that starts on a cut
  // (the layout puts in-times there) hides the line under its start edge.
  paintShotMarks(g, x, shots) {
    g.fillStyle = SHOT;
    for (const t of shots) {
      const px = Math.round(x(t));
      g.beginPath();
      g.moveTo(px - 4, RULER - 8);
      g.lineTo(px + 5, RULER - 8);
      g.lineTo(px + 0.5, RULER - 1);
      g.closePath();
      g.fill();
    }
  }

  paintCueEdges(g, x, t0, t1, h) {
    const sel = this.opts.selected();
    g.font = "12px system-ui, sans-serif";
    g.textBaseline = "top";
    this.visibleCues(t0, t1, (k, s, e, c) => {
      const a = Math.round(x(s));
      const b = Math.round(x(e));
      const selected = k === sel;
      // Edges: 2 px, dark enough to read on the waveform's background (> 3:1).
      g.fillStyle = selected ? "#9a3412" : "#1e3a8a";
      g.fillRect(a, RULER, selected ? 3 : 2, h - RULER);
      g.fillRect(b - (selected ? 3 : 2), RULER, selected ? 3 : 2, h - RULER);
      // Top band with the cue's number.
      g.fillRect(a, RULER, b - a, selected ? 3 : 2);
      if (b - a > 18) {
        const label = String(c.index);
        const tw = g.measureText(label).width + 6;
        g.fillStyle = selected ? "#9a3412" : "#1e3a8a";
        g.fillRect(a, RULER + 2, Math.min(tw, b - a), 16);
        g.fillStyle = "#fff";
        g.fillText(label, a + 3, RULER + 4);
      }
      this.opts.paintCue?.(g, c, a, b, h); // the speaker's band and name (speakers.js)
    });
  }

  paintWave(g, w, h, t0) {
    const level = this.level();
    if (level < 0) return;
    const p = this.peaks;
    const perMs = p.perSecond / p.factor ** level / 1000;
    const count = p.levels[level];
    const top = RULER + 20;
    const mid = (top + h) / 2;
    const half = (h - top) / 2 - 2;
    g.fillStyle = "#4b5b7a";
    for (let px = 0; px < w; px++) {
      const a = Math.floor((t0 + px / this.pxPerMs) * perMs);
      const b = Math.min(count, Math.max(a + 1, Math.floor((t0 + (px + 1) / this.pxPerMs) * perMs)));
      if (a >= count) break;
      const v = this.peak(level, a, b);
      if (v < 0) continue;
      const bar = Math.max(1, (v / 255) * half);
      g.fillRect(px, mid - bar, 1, bar * 2);
    }
  }

  paintRuler(g, w, t0, t1) {
    g.fillStyle = "#fff";
    g.fillRect(0, 0, w, RULER);
    g.fillStyle = "#5d6677";
    g.fillRect(0, RULER - 1, w, 1);
    const f = this.opts.frameMs();
    const pxPerFrame = f * this.pxPerMs;
    // Labelled ticks at least ~70 px apart: a number of frames, or of seconds.
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].map((s) => s * 1000);
    const step = steps.find((s) => s * this.pxPerMs >= 70) ?? 3600000;
    const minor = pxPerFrame >= 6 ? f : step / 5;
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "top";
    // Minor ticks: frames when a frame is wide enough to see, else fifths of a step.
    if (minor * this.pxPerMs >= 4) {
      const fps = Math.round(1000 / f);
      const first = Math.floor(t0 / minor);
      for (let i = first; i * minor <= t1; i++) {
        const t = i * minor;
        const px = Math.round((t - t0) * this.pxPerMs);
        g.fillRect(px, RULER - 5, 1, 4);
        // Frame numbers inside the second when there is room.
        if (minor === f && pxPerFrame >= 22 && i % fps >= Math.ceil(40 / pxPerFrame)) {
          g.fillText(String(i % fps), px + 2, RULER - 15);
        }
      }
    }
    for (let t = Math.floor(t0 / step) * step; t <= t1; t += step) {
      const px = Math.round((t - t0) * this.pxPerMs);
      g.fillRect(px, 0, 1, RULER);
      g.fillText(clock(t), px + 3, 3);
    }
  }
}

// h:mm:ss or m:ss (whole seconds on the ruler).
function clock(ms) {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor(s / 60) % 60;
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}
