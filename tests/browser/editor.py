"""The web application in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright
for Python; Playwright's own browser download is never used). Run by tests/browser.rs with one JSON
argument: {base, link, key, audio, video, foreign, shots, profile}. Exits non-zero on the first failed check."""

import json
import re
import sys
import urllib.request

from playwright.sync_api import expect, sync_playwright

cfg = json.loads(sys.argv[1])
BASE = cfg["base"]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


def api(path):
    req = urllib.request.Request(BASE + path, headers={"Authorization": "Bearer " + cfg["key"]})
    with urllib.request.urlopen(req) as r:
        return r.read()


def revision(page, n):
    expect(page.locator("#save-state")).to_have_text(f"Saved · revision {n}", timeout=10000)


def saved_after(page, n, timeout=10000):
    """Waits for "Saved · revision M" with M > n; answers M."""
    waited = 0
    while True:
        t = page.locator("#save-state").inner_text()
        m = re.fullmatch(r"Saved · revision (\d+)", t)
        if m and int(m.group(1)) > n:
            return int(m.group(1))
        if waited >= timeout:
            raise AssertionError(f"still {t!r}, wanted a revision after {n}")
        page.wait_for_timeout(50)
        waited += 50


def api_cues(job):
    """The API's cues of a job: each as (start, end, text with its line breaks as "|")."""
    cues = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]
    return [(c["start"], c["end"], "|".join(c["lines"])) for c in cues]


def open_text(page, k):
    """Opens cue k's text box with Enter; answers the box."""
    page.locator("li.cue").nth(k).focus()
    page.keyboard.press("Enter")
    area = page.locator("li.cue").nth(k).locator("textarea")
    expect(area).to_be_focused()
    return area


def caret_before(area, word):
    """Puts the caret right before `word` in the box."""
    at = area.input_value().index(word)
    area.evaluate(f"(a) => a.setSelectionRange({at}, {at})")


def cue_count(page):
    return page.locator("li.cue").count()


def wait_js(page, expr, timeout=10000):
    """Polls a page expression until truthy (Playwright's wait_for_function evaluates strings
    with eval, which the pages' Content-Security-Policy rightly refuses)."""
    waited = 0
    while not page.evaluate(expr):
        if waited >= timeout:
            raise AssertionError(f"timed out waiting for {expr}")
        page.wait_for_timeout(100)
        waited += 100


def listing(page):
    """Each cue as the page shows it: its position, number and times, each word with its stored
    index, its warnings."""
    return page.evaluate("""Array.from(document.querySelectorAll('li.cue')).map((li) =>
        [li.dataset.k, li.getAttribute('aria-label'),
         Array.from(li.querySelectorAll('.w')).map((w) => `${w.dataset.i}:${w.textContent}`).join(' '),
         li.querySelector('.warnings')?.textContent ?? ''].join('|'))""")


def step(name):
    print("step:", name, flush=True)


def api_text(job):
    """The API's cues as one string: " / " between cues, "|" between lines."""
    return " / ".join(c[2] for c in api_cues(job))


def nothing_lost(page, ctx, errors):
    """Typed text reaches the server whatever the subtitler does next (on the video job)."""
    job = cfg["video"]
    rev = 0
    revision(page, rev)

    step("typed text is saved when the box loses focus (Tab)")
    area = open_text(page, 0)
    words = area.input_value().split()
    area.fill(area.input_value().replace(words[0], words[0] + " there", 1))
    expect(page.locator("#save-state")).to_have_text("Unsaved change in cue 1")
    page.keyboard.press("Tab")
    rev = saved_after(page, rev)
    assert f"{words[0]} there {words[1]}" in api_text(job), api_text(job)

    step("a shortcut saves the typed text first (Alt+S splits at the caret)")
    area = open_text(page, 0)
    words = area.input_value().split()
    area.fill(area.input_value().replace(" there ", " there, lovely ", 1))
    caret_before(area, "lovely")
    page.keyboard.press("Alt+s")
    rev += 2  # the text, then the split
    revision(page, rev)
    assert " / lovely" in api_text(job) and "there, / lovely" in api_text(job), api_text(job)
    assert cue_count(page) >= 2

    step("typed text is saved when another cue is clicked")
    area = open_text(page, 0)
    area.fill(area.input_value().replace("there,", "there again,", 1))
    page.locator("li.cue").nth(1).locator(".w").first.click()
    rev = saved_after(page, rev)
    assert "there again," in api_text(job), api_text(job)
    expect(page.locator("li.cue textarea")).to_have_count(0)

    step("a toolbar action saves the typed text first, then acts at the caret")
    area = open_text(page, 1)
    words = area.input_value().split()
    area.fill(area.input_value().replace("lovely", "lovely old", 1))
    # (The split left cue 1 as it was cut: "lovely" and the words after it in that cue.)
    assert len(words) >= 2 and words[0] == "lovely", words
    caret_before(area, words[-1])
    page.click("#linebreak")
    rev += 2  # the text, then the line break
    revision(page, rev)
    assert "lovely old" in api_text(job) and "|" + words[-1] in api_text(job), (words, api_text(job))

    step("leaving the page with typed text asks first, and a reload brings the text back")
    dialogs = []

    def on_dialog(d):
        # The first time the subtitler stays on the page; the second time they leave.
        dialogs.append(d.type)
        d.dismiss() if len(dialogs) == 1 else d.accept()

    page.on("dialog", on_dialog)
    area = open_text(page, 1)
    typed = area.input_value().replace("lovely old", "lovely young", 1)
    area.fill(typed)
    page.evaluate("setTimeout(() => location.reload(), 0)")
    page.wait_for_timeout(700)
    assert dialogs == ["beforeunload"], dialogs
    expect(page.locator("li.cue").nth(1).locator("textarea")).to_have_value(typed)
    # The subtitler leaves anyway (or the tab crashes): the text comes back in its box.
    page.goto(BASE + "/editor/" + job)
    assert dialogs == ["beforeunload"] * 2, dialogs
    page.remove_listener("dialog", on_dialog)
    area = page.locator("li.cue").nth(1).locator("textarea")
    expect(area).to_have_value(typed)
    expect(page.locator("#save-state")).to_have_text("Unsaved change in cue 2")
    area.press("Enter")
    rev = saved_after(page, rev)
    assert "lovely young" in api_text(job), api_text(job)

    step("a colleague's save: the typed text is kept and re-applied on their version")
    other = ctx.new_page()
    other.goto(BASE + "/editor/" + job)
    revision(other, rev)
    area = open_text(page, 0)
    typed = area.input_value().replace("again", "once more", 1)
    area.fill(typed)
    theirs = open_text(other, 1)
    theirs.fill(theirs.input_value().replace("young", "bright", 1))
    other.keyboard.press("Enter")
    saved_after(other, rev)
    other.close()
    area.press("Enter")
    expect(page.locator("#conflict")).to_be_visible()
    expect(page.locator("#conflict")).to_contain_text("Your text for cue 1 is kept")
    expect(area).to_have_value(typed)
    page.click("#conflict-reload")
    area = page.locator("li.cue").first.locator("textarea")
    expect(area).to_have_value(typed)
    area.press("Enter")
    rev = saved_after(page, rev + 1)
    assert "once more" in api_text(job) and "bright" in api_text(job), api_text(job)
    # The browser logs the one refused save (409) as a console error.
    assert sum("409" in e for e in errors) == 1, errors
    errors[:] = [e for e in errors if "409" not in e]

    step("replace with an empty replacement asks first")
    before = api_cues(job)
    page.fill("#find", "bright")
    # Counted and highlighted as it is typed; Enter finds it.
    expect(page.locator("#find-count")).to_have_text("1 in 1 cue")
    expect(page.locator(".w.found")).to_have_count(1)
    page.press("#find", "Enter")
    expect(page.locator("li.cue.selected .w.found")).to_have_count(1)
    page.fill("#replace", "")
    page.click("#replace-all")
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text("Delete “bright” in 1 place")
    # The preview: the word as it is and as it will be.
    expect(page.locator("#confirm-text")).to_contain_text("bright → (nothing)")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-replace-preview.png")
    page.click("#confirm-cancel")
    page.wait_for_timeout(300)
    assert api_cues(job) == before
    revision(page, rev)
    page.press("#replace", "Enter")
    page.click("#confirm-ok")
    rev = saved_after(page, rev)
    assert "bright" not in api_text(job), api_text(job)
    page.fill("#find", "")


def find_and_replace(page):
    """Find takes whole phrases (across cues), a case option and a whole-word option, honoured by
    the count, the highlight, find next and replace all (its preview and the server's replace)."""
    job = cfg["video"]
    page.goto(BASE + "/editor/" + job)
    expect(page.locator("li.cue").first).to_be_visible()
    before = api_cues(job)
    assert len(before) >= 2, before
    a = before[0][2].replace("|", " ").split()[-1]
    b = before[1][2].replace("|", " ").split()[0]
    joined = " ".join(c[2].replace("|", " ") for c in before)
    step(f"a phrase across two cues ('{a} {b}'), any case")
    phrase = f"{a.upper()}   {b.upper()}"
    n = len(re.findall(re.escape(f"{a} {b}".lower()), joined.lower()))
    page.fill("#find", phrase)
    expect(page.locator("#find-count")).to_have_text(re.compile(f"^{n} in [0-9]+ cues$"))
    cue = page.locator("li.cue")
    expect(cue.nth(0).locator(".w.found").last).to_have_text(a)
    expect(cue.nth(1).locator(".w.found").first).to_have_text(b)
    page.press("#find", "Enter")
    expect(page.locator("li.cue.selected .w.found").first).to_be_visible()
    step("match case: the upper-cased phrase is no match")
    page.check("#find-case")
    expect(page.locator("#find-count")).to_have_text("no match")
    expect(page.locator(".w.found")).to_have_count(0)
    page.uncheck("#find-case")
    expect(page.locator("#find-count")).to_have_text(re.compile(f"^{n} in "))
    step("whole words: part of a word is found only without it")
    long = next(w for w in re.findall(r"[A-Za-z]{5,}", joined)
                if not re.search(r"(?<![A-Za-z0-9])" + re.escape(w[:-1].lower()) + r"(?![A-Za-z0-9])", joined.lower()))
    page.fill("#find", long[:-1])
    expect(page.locator("#find-count")).not_to_have_text("no match")
    page.check("#find-whole")
    expect(page.locator("#find-count")).to_have_text("no match")
    page.fill("#find", f"{a} {b}".lower())
    expect(page.locator("#find-count")).to_have_text(re.compile(f"^{n} in "))
    step("replace all: the preview shows the phrase as it is and will be; the cues stay the cues")
    new = f"{a.upper()} and {b.upper()}"
    page.fill("#replace", new)
    rev = int(re.search(r"\d+", page.locator("#save-state").inner_text()).group(0))
    page.click("#replace-all")
    expect(page.locator("#confirm-text")).to_contain_text(f"in {n} place")
    expect(page.locator("#confirm-text")).to_contain_text(f"Cue 1: {a} {b} → {new}")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-find-phrase.png")
    page.click("#confirm-ok")
    saved_after(page, rev)
    after = api_cues(job)
    assert len(after) == len(before), (before, after)
    assert new in " ".join(c[2].replace("|", " ") for c in after), after
    if n == 1:
        # Every cue the phrase does not touch is byte-identical.
        assert after[2:] == before[2:], (before, after)
    page.uncheck("#find-whole")
    page.fill("#find", "")


def one_screen(page):
    """At 800 px wide the cue list and the subtitle over the picture keep the real line breaks; at
    1280x720 a video job shows its picture, the timeline and at least six whole cues at once."""
    job = cfg["video"]
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(BASE + "/editor/" + job)
    expect(page.locator("li.cue").first).to_be_visible()
    wait_js(page, "document.querySelector('video') && document.querySelector('video').readyState >= 2", 15000)
    step("800 px wide: the list and the subtitle over the picture show a cue's real line breaks")
    cues = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]
    k = next(i for i, c in enumerate(cues) if len(c["lines"]) >= 2)
    want = cues[k]["lines"]
    page.evaluate(f"document.querySelector('video').currentTime = {(cues[k]['start'] + cues[k]['end']) / 2}")
    wait_js(page, "!document.getElementById('subtitle').hidden")
    shown = page.evaluate(f"""(() => {{
        const rows = (els) => els.map((e) => [e.textContent.replace(/\\s+/g, ' ').trim(), Math.round(e.getBoundingClientRect().top)]);
        return {{ list: rows(Array.from(document.querySelectorAll('li.cue')[{k}].querySelectorAll('.line'))),
                  over: rows(Array.from(document.querySelectorAll('#subtitle span'))) }};
    }})()""")
    print("   ", shown, flush=True)
    for where in ("list", "over"):
        assert [t for t, _ in shown[where]] == want, (where, shown, want)
        tops = [y for _, y in shown[where]]
        assert all(b > a for a, b in zip(tops, tops[1:])), (where, shown)
    page.screenshot(path=cfg["shots"] + "/editor-video-800.png")

    page.set_viewport_size({"width": 1280, "height": 720})
    step("enough cues to fill the list: the video job's cues split word by word")
    while cue_count(page) < 9:
        rows = page.locator("li.cue")
        k = next((i for i in reversed(range(rows.count())) if rows.nth(i).locator(".w").count() >= 2), None)
        if k is None:
            break
        rev = int(re.search(r"\d+", page.locator("#save-state").inner_text()).group(0))
        rows.nth(k).locator(".w").nth(1).click()
        page.click("#split")
        saved_after(page, rev)
    assert cue_count(page) >= 7, cue_count(page)
    page.locator("#cues").evaluate("(l) => { l.scrollTop = 0; }")
    step("1280x720: the picture, the timeline and six whole cues on one screen")
    box = page.evaluate("""(() => {
        const inside = (r, o) => r.top >= o.top - 0.5 && r.bottom <= o.bottom + 0.5 && r.left >= o.left - 0.5 && r.right <= o.right + 0.5;
        const view = { top: 0, left: 0, bottom: innerHeight, right: innerWidth };
        const list = document.getElementById('cues').getBoundingClientRect();
        const rows = Array.from(document.querySelectorAll('li.cue')).filter((li) => {
            const r = li.getBoundingClientRect();
            return r.height > 0 && inside(r, view) && inside(r, list);
        }).length;
        const video = document.querySelector('#picture video').getBoundingClientRect();
        const wave = document.getElementById('wave').getBoundingClientRect();
        return { rows, video: Math.round(video.height), videoInside: inside(video, view),
                 wave: Math.round(wave.height), waveInside: inside(wave, view),
                 tools: Math.round(document.querySelector('.tools').getBoundingClientRect().height),
                 page: document.documentElement.scrollHeight };
    })()""")
    print("   ", box, flush=True)
    page.screenshot(path=cfg["shots"] + "/editor-video-720-cues.png")
    assert box["rows"] >= 6, box
    assert box["videoInside"] and box["video"] >= 150, box
    assert box["waveInside"] and box["wave"] >= 80, box
    assert box["page"] <= 720, box


def the_timeline(page):
    """Cue edges dragged on the timeline reach the API; the timeline zooms."""
    job = cfg["video"]
    step("the timeline: a cue's edge dragged with the mouse reaches the API, on the frame grid")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(BASE + "/editor/" + job)
    canvas = page.locator("#wave")
    wait_js(page, "Number(document.getElementById('wave').dataset.pxPerMs) > 0 && document.querySelector('video').readyState >= 1")
    data = json.loads(api(f"/v1/jobs/{job}/transcript"))
    cues = [(round(c["start"] * 1000), round(c["end"] * 1000)) for c in data["cues"]]
    duration = page.evaluate("document.querySelector('video').duration * 1000")
    gap = 80  # the default minimum gap: 2 frames at 25 fps
    # An edge with room for 3 frames (and the gap) on its side.
    k, edge, sign = next(
        (k, e, d)
        for k, (s, t) in enumerate(cues)
        for e, d, room in [
            ("end", 1, (cues[k + 1][0] - gap if k + 1 < len(cues) else duration) - t),
            ("start", -1, s - (cues[k - 1][1] + gap if k > 0 else 0)),
        ]
        if room >= 160
    )
    at = cues[k][0 if edge == "start" else 1]
    view = lambda: (float(canvas.get_attribute("data-view-start")), float(canvas.get_attribute("data-px-per-ms")))
    v0, ppm = view()
    box = canvas.bounding_box()
    x = box["x"] + (at - v0) * ppm
    y = box["y"] + box["height"] - 30
    rev = int(re.search(r"\d+", page.locator("#save-state").inner_text()).group())
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + sign * 60 * ppm, y, steps=4)
    page.mouse.move(x + sign * 125 * ppm, y, steps=4)
    page.mouse.up()
    # Three frames (120 ms at 25 fps) from where it was, snapped to the frame grid.
    want = at + sign * 120
    waited = 0
    while True:
        got = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]
        got = round(got["start" if edge == "start"  else "end"] * 1000)
        if got == want or waited > 10000:
            break
        page.wait_for_timeout(200)
        waited += 200
    assert got == want, (k, edge, at, want, got)
    saved_after(page, rev)
    print(f"   cue {k + 1} {edge} {at} -> {got} ms", flush=True)

    step("the timeline draws the video's shot change (the cut to colour bars at 2 s) as a line")
    shots = json.loads(page.evaluate(f"fetch('/editor/{job}/data').then((r) => r.text())"))["job"]["shotChanges"]
    assert len(shots) == 1 and abs(shots[0] - 2000) <= 80, shots
    # The canvas's violet pixels in a row (CSS px from the top; negative: from the bottom).
    violet_in_row = """(y) => {
        const c = document.getElementById('wave');
        const dpr = window.devicePixelRatio || 1;
        const row = Math.round((y < 0 ? c.height / dpr + y : y) * dpr);
        const px = c.getContext('2d').getImageData(0, row, c.width, 1).data;
        const violet = [];
        for (let i = 0; i < c.width; i++) {
            if (px[4 * i] === 0x7c && px[4 * i + 1] === 0x3a && px[4 * i + 2] === 0xed) violet.push(i / dpr);
        }
        return violet;
    }"""
    v0, ppm = view()
    at_cut = (shots[0] - v0) * ppm
    # A row under the ruler (away from the cues' labels): the line is at the cut's place, and
    # nowhere else in the row.
    row = page.evaluate(violet_in_row, -12)
    assert row and all(abs(x - at_cut) <= 1.5 for x in row), (at_cut, row)
    # A row of the ruler, which no cue edge covers (a cue starting on the cut hides the line
    # under its edge): the mark above the line, and nothing else.
    mark = page.evaluate(violet_in_row, 15)
    assert mark and all(abs(x - at_cut) <= 4 for x in mark), (at_cut, mark)
    print(f"   shot change at {shots[0]} ms drawn at x={row[0]:.0f} px, marked on the ruler at "
          f"{mark[0]:.0f}-{mark[-1]:.0f} px", flush=True)
    page.screenshot(path=cfg["shots"] + "/editor-timeline-shot.png")

    step("the timeline zooms (Ctrl+wheel) around the pointer; screenshot")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    for _ in range(4):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(50)
    page.keyboard.up("Control")
    # Four notches of 1.25: at least twice as close, or as close as the timeline goes (24 px a
    # frame of 40 ms at 25 fps) for a file this short.
    wait_js(page, f"Number(document.getElementById('wave').dataset.pxPerMs) >= {min(ppm * 2, 24 / 40) - 1e-9}")
    page.wait_for_timeout(300)
    page.screenshot(path=cfg["shots"] + "/editor-timeline-zoomed.png")

    step("the list and the timeline follow each other; duration, CPS and the time format")
    starts = [round(c["start"] * 1000) for c in json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]]
    in_view = "((ms) => { const c = document.getElementById('wave'); const s = Number(c.dataset.viewStart); return s <= ms && ms <= s + c.clientWidth / Number(c.dataset.pxPerMs); })"
    # As close as the timeline goes (a second of the file is 600 px), so the whole file does not
    # fit; the timeline scrolled to its end, the first cue selected in the list comes into view.
    page.keyboard.down("Control")
    for _ in range(8):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(50)
    page.keyboard.up("Control")
    wait_js(page, "Number(document.getElementById('wave').dataset.pxPerMs) >= 0.6 - 1e-9")
    print("   cue starts", starts, "view", page.evaluate("[Number(document.getElementById('wave').dataset.viewStart), document.getElementById('wave').clientWidth / Number(document.getElementById('wave').dataset.pxPerMs)]"), flush=True)
    page.evaluate("(() => { const t = document.querySelector('div.timeline'); t.scrollLeft = t.scrollWidth; t.dispatchEvent(new Event('scroll')); })()")
    wait_js(page, f"!{in_view}({starts[0]})")
    page.locator("li.cue").first.click()
    wait_js(page, f"{in_view}({starts[0]})")
    page.locator("li.cue").nth(k).click()
    # Each cue shows its duration and reading pace; the bar the selected cue's.
    assert re.search(r"\d\.\d\d s · \d+ CPS", page.locator("li.cue .times").first.inner_text()), page.locator("li.cue .times").first.inner_text()
    expect(page.locator("#cue-cps")).to_have_text(re.compile(r"^\d+\.\d CPS$"))
    expect(page.locator("#cue-start")).to_have_value(re.compile(r"^\d\d:\d\d:\d\d:\d\d$"))
    page.select_option("#time-format", "seconds")
    expect(page.locator("#cue-start")).to_have_value(re.compile(r"^\d+:\d\d\.\d{3}$"))
    expect(page.locator("#cue-duration")).to_have_value(re.compile(r"^\d+\.\d{3}$"))
    page.select_option("#time-format", "timecode")

    step("a start typed as timecode reaches the API")
    page.locator("li.cue").nth(k).click()
    cue = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]
    start = round(cue["start"] * 1000)
    frames = round((start + 40) * 25 / 1000)
    typed = f"00:00:{frames // 25:02d}:{frames % 25:02d}"
    expect(page.locator("#cue-start")).to_be_visible()
    page.fill("#cue-start", typed)
    page.press("#cue-start", "Enter")
    waited = 0
    while round(json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]["start"] * 1000) != start + 40 and waited < 10000:
        page.wait_for_timeout(200)
        waited += 200
    got = round(json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]["start"] * 1000)
    assert got == start + 40, (typed, start, got)
    print(f"   typed {typed}: start {start} -> {got} ms", flush=True)
    rev = saved_after(page, -1)
    history = json.loads(page.evaluate(f"fetch('/editor/{job}/revisions').then((r) => r.text())"))["revisions"]
    assert history[0]["note"].startswith(f"Set cue {k + 1}'s start to"), history[0]
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-typed-time.png")

    step("three nudges of one edge in a row are one revision")
    cue = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]
    start = round(cue["start"] * 1000)
    page.locator("li.cue").nth(k).focus()
    for _ in range(3):
        page.keyboard.press("Alt+BracketRight")
    rev = saved_after(page, rev)
    page.wait_for_timeout(1000)
    assert page.locator("#save-state").inner_text() == f"Saved · revision {rev}", page.locator("#save-state").inner_text()
    got = round(json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][k]["start"] * 1000)
    assert got == start + 120, (start, got)
    history = json.loads(page.evaluate(f"fetch('/editor/{job}/revisions').then((r) => r.text())"))["revisions"]
    assert history[0]["revision"] == rev and history[1]["note"].startswith(f"Set cue {k + 1}'s start"), history[:2]
    print(f"   start {start} -> {got} ms in revision {rev}", flush=True)

    step("the playhead sets the selected cue's start (Alt+I) and end (Alt+O), on the frame grid")
    # Only moves that cannot be refused: the nudges above moved cue k's start 120 ms later into
    # room it had, so two frames of that back is room it surely has; and the end of the cue with
    # the most room after it (and under 6 s) one frame later lengthens it without reaching the
    # next cue's gap (a shorter end may be refused by reading pace).
    cues = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]
    start = round(cues[k]["start"] * 1000)
    duration = page.evaluate("document.querySelector('video').duration * 1000")
    ms = [(round(c["start"] * 1000), round(c["end"] * 1000)) for c in cues]
    room, m = max(
        ((ms[i + 1][0] - gap if i + 1 < len(ms) else duration) - e, i)
        for i, (s, e) in enumerate(ms)
        if e - s < 6000
    )
    assert room >= 40, ("no cue end with a frame of room after it", ms, duration)

    def at_playhead(cue, key, edge, want):
        # 5 ms off the frame: the playhead's time is snapped to the grid.
        page.evaluate(
            f"""() => new Promise((done) => {{
              const v = document.querySelector('video');
              v.pause();
              v.addEventListener('seeked', () => done(), {{ once: true }});
              v.currentTime = {(want + 5) / 1000};
            }})"""
        )
        page.locator("li.cue").nth(cue).focus()
        page.keyboard.press(key)
        waited = 0
        while True:
            got = round(json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"][cue][edge] * 1000)
            if got == want or waited > 10000:
                break
            page.wait_for_timeout(200)
            waited += 200
        assert got == want, (key, cue, edge, want, got)
        print(f"   {key}: cue {cue + 1} {edge} -> {got} ms", flush=True)

    at_playhead(k, "Alt+KeyI", "start", start - 80)
    at_playhead(m, "Alt+KeyO", "end", ms[m][1] + 40)

    step("the subtitle over the playing video is the cue at the player's time, with its line breaks")
    # A line break in the first cue (edits keep the lines the subtitler left, so make one).
    # In the longest cue, so the playing video surely shows it.
    counts = [c.locator(".w").count() for c in page.locator("li.cue").all()]
    longest = counts.index(max(counts))
    page.locator("li.cue").nth(longest).locator(".w").nth(2).click()
    page.click("#linebreak")
    waited = 0
    while "|" not in api_cues(job)[longest][2] and waited < 10000:
        page.wait_for_timeout(200)
        waited += 200
    assert "|" in api_cues(job)[longest][2], api_cues(job)
    cues = [(c["start"] * 1000, c["end"] * 1000, "|".join(c["lines"])) for c in json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]]
    page.evaluate("document.querySelector('video').currentTime = 0")
    page.click("#play")
    seen = set()
    for _ in range(12):
        page.wait_for_timeout(250)
        t, shown = page.evaluate("""[document.querySelector('video').currentTime * 1000,
            document.getElementById('subtitle').hidden ? '' :
            Array.from(document.querySelectorAll('#subtitle span')).map((s) => s.textContent).join('|')]""")
        # Within a frame of an edge either answer is right.
        if any(abs(t - e) < 80 for c in cues for e in c[:2]):
            continue
        want = next((c[2] for c in cues if c[0] <= t < c[1]), "")
        assert shown == want, (t, shown, want)
        seen.add(shown)
        if "|" in shown:
            page.screenshot(path=cfg["shots"] + "/editor-video-720.png")
    assert len([x for x in seen if x]) >= 1 and "|" in "".join(seen), seen
    page.click("#play")
    print("   shown:", sorted(seen), flush=True)

    step("keyboard: the cue list is one Tab stop, arrows move inside it; the shortcut sheet")
    page.locator("li.cue").first.click()
    assert page.evaluate("Array.from(document.querySelectorAll('li.cue')).filter((li) => li.tabIndex === 0).length") == 1
    page.focus("#next-problem")
    page.keyboard.press("Tab")
    expect(page.locator("li.cue").first).to_be_focused()
    # Tab leaves the list: past the selected cue's own fix buttons, never to another cue.
    fixes = page.locator("li.cue").first.locator("button.fix").count()
    for _ in range(fixes + 1):
        page.keyboard.press("Tab")
        assert page.evaluate("!document.activeElement.matches('li.cue') && (document.activeElement.closest('li.cue')?.dataset.k ?? '0') === '0'"), "Tab went to another cue"
    assert page.evaluate("!document.activeElement.closest('li.cue')"), "Tab left the list"
    for _ in range(fixes + 1):
        page.keyboard.press("Shift+Tab")
    expect(page.locator("li.cue").first).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.locator("li.cue").nth(1)).to_be_focused()
    assert page.evaluate("document.querySelector('li.cue[data-k=\"1\"]').tabIndex") == 0
    assert page.evaluate("document.querySelector('li.cue[data-k=\"0\"]').tabIndex") == -1
    page.keyboard.press("Home")
    expect(page.locator("li.cue").first).to_be_focused()
    # Every button named for what it does: no two visible buttons share a name.
    names = page.evaluate("""Array.from(document.querySelectorAll('button')).filter((b) => b.offsetParent)
        .map((b) => b.getAttribute('aria-label') || b.textContent.trim())""")
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for name in ["Start −1 frame", "Start +1 frame", "End −1 frame", "End +1 frame"]:
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(1)
    # Non-text contrast (WCAG 1.4.11): every visible control's border has >= 3:1 against what
    # is behind the control (the first ancestor with a background of its own).
    borders = page.evaluate("""Array.from(document.querySelectorAll(
            'button, .button, select, textarea, input:not([type=checkbox]):not([type=radio]):not([type=range]):not([type=hidden])'))
        .filter((el) => el.offsetParent && parseFloat(getComputedStyle(el).borderTopWidth) > 0)
        .map((el) => {
            let up = el.parentElement, bg = 'rgb(255, 255, 255)';
            while (up) {
                const c = getComputedStyle(up).backgroundColor;
                if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; }
                up = up.parentElement;
            }
            return [el.id || el.textContent.trim().slice(0, 20) || el.tagName, getComputedStyle(el).borderTopColor, bg];
        })""")
    assert len(borders) >= 10, borders
    low = [(n, c, b, round(contrast(c, b), 2)) for n, c, b in borders if contrast(c, b) < 3]
    assert not low, low
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text("Alt+I / Alt+O")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-shortcuts.png")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()

    step("review at speed: problems only, F8, a warning's detail and its one-click fix, replay")
    with_problem = page.evaluate("Array.from(document.querySelectorAll('li.cue')).filter((li) => li.classList.contains('has-problem')).map((li) => Number(li.dataset.k))")
    assert with_problem, "the video job's short cues have warnings"
    page.locator("li.cue").first.click()
    page.keyboard.press("F8")
    k = page.evaluate("Number(document.querySelector('li.cue.selected').dataset.k)")
    assert k in with_problem and (k > 0 or with_problem == [0]), (k, with_problem)
    page.check("#problems-only")
    visible = page.evaluate("Array.from(document.querySelectorAll('li.cue')).filter((li) => li.offsetParent).map((li) => Number(li.dataset.k))")
    assert visible == with_problem, (visible, with_problem)
    # The detail is in the list, not only in a tooltip.
    detail = page.locator("li.cue.has-problem .warning .detail").first.inner_text()
    assert len(detail.strip()) > 10, detail
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-problems.png")
    fix = page.locator('li.cue button.fix[data-fix="pace"]')
    if fix.count() > 0:
        # At 1280 px each fix's label is on one line (it wrapped to "Extend to / pace").
        rows = page.evaluate("Array.from(document.querySelectorAll('li.cue button.fix')).filter((b) => b.offsetParent).map((b) => { const r = document.createRange(); r.selectNodeContents(b); return [b.textContent, new Set(Array.from(r.getClientRects()).map((x) => Math.round(x.top))).size]; })")
        assert rows and all(n == 1 for _, n in rows), rows
        li = fix.first.locator("xpath=ancestor::li[1]")
        idx = int(li.get_attribute("data-k"))
        rev = int(re.search(r"\d+", page.locator("#save-state").inner_text()).group())
        before = api_cues(job)
        page.evaluate("document.getElementById('notice').hidden = true")
        fix.first.click()
        # Saved as a new revision, or refused with the reason in the notice.
        wait_js(page, f"/revision (\\d+)/.test(document.getElementById('save-state').textContent) && (Number(/revision (\\d+)/.exec(document.getElementById('save-state').textContent)[1]) > {rev} || !document.getElementById('notice').hidden)")
        after = api_cues(job)
        state = page.locator("#save-state").inner_text()
        # Either saved (the end moved later) or refused with a reason shown.
        assert (after[idx][1] > before[idx][1]) or page.locator("#notice").is_visible(), (before[idx], after[idx], state)
        if after[idx][1] <= before[idx][1]:
            # Refused (the browser logs the 400): the reason is shown instead.
            print("   refused:", page.locator("#notice").inner_text(), flush=True)
            assert sum("400" in e for e in errors) == 1, errors
            errors[:] = [e for e in errors if "400" not in e]
        print(f"   extend to pace: cue {idx + 1} {before[idx]} -> {after[idx]}", flush=True)
    page.uncheck("#problems-only")
    # Replay the cue while typing: Alt+R plays from its start and pauses at its end.
    cues = json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]
    longest = max(range(len(cues)), key=lambda i: cues[i]["end"] - cues[i]["start"])
    start, end = cues[longest]["start"], cues[longest]["end"]
    area = open_text(page, longest)
    page.keyboard.press("Alt+r")
    wait_js(page, f"document.querySelector('video').paused && document.querySelector('video').currentTime > {start + 0.3}", 10000)
    t = page.evaluate("document.querySelector('video').currentTime")
    assert abs(t - end) < 0.3, (t, start, end)
    page.keyboard.press("Alt+j")
    t2 = page.evaluate("document.querySelector('video').currentTime")
    assert t2 <= max(0, t - 1.9), (t, t2)
    expect(area).to_be_focused()
    # Play and pause while typing (Ctrl+Space), the text box keeping the focus.
    page.keyboard.press("Control+Space")
    wait_js(page, "!document.querySelector('video').paused")
    page.keyboard.press("Control+Space")
    wait_js(page, "document.querySelector('video').paused")
    expect(area).to_be_focused()
    # Shortcuts go by the key's place (e.code): macOS's Option+J types "∆", an AZERTY layout
    # another letter; back 2 seconds all the same.
    page.evaluate("document.querySelector('video').currentTime = 3")
    wait_js(page, "Math.abs(document.querySelector('video').currentTime - 3) < 0.05")
    area.evaluate("(a) => a.dispatchEvent(new KeyboardEvent('keydown', {key: '\u2206', code: 'KeyJ', altKey: true, bubbles: true}))")
    t3 = page.evaluate("document.querySelector('video').currentTime")
    assert abs(t3 - 1) < 0.1, t3
    page.keyboard.press("Escape")

    step("the audio job at 1280x720: the subtitle over the timeline; screenshot")
    page.goto(BASE + "/editor/" + cfg["audio"])
    wait_js(page, "document.querySelector('audio') && document.querySelector('audio').readyState >= 1")
    page.locator("li.cue").first.locator(".w").nth(1).click()
    expect(page.locator("#subtitle")).to_be_visible()
    page.wait_for_timeout(300)
    page.screenshot(path=cfg["shots"] + "/editor-audio-720.png")


def contrast(a, b):
    """WCAG contrast of two CSS rgb() colours."""
    def lum(c):
        r, g, b_ = [int(x) / 255 for x in re.findall(r"\d+", c)[:3]]
        f = lambda v: v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b_)
    hi, lo = sorted([lum(a), lum(b)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def speakers(page):
    """Speakers (issue 23 item 4), on the job uploaded from the list (one voice, two cues): a
    name typed in the Speakers panel shows in the cue list and the text transcript, a digit key
    sets the selected cue's speaker (one revision), a merge asks first and makes the two one,
    undo brings the second back; detecting again with 1 speaker asks first and gives every cue
    the speaker a person set (Ben), undo brings Anna back; each speaker's colour stripe has >= 3:1 against the list."""
    job = cfg["pending"]["id"]
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(BASE + "/editor/" + job)
    expect(page.locator("li.cue")).to_have_count(2)
    revision(page, 0)
    first, second = page.locator("li.cue").nth(0), page.locator("li.cue").nth(1)
    expect(first.locator(".speaker")).to_contain_text("Speaker 0")

    step("speakers: a name typed in the panel shows in the list and the text transcript")
    name0 = page.locator('#speaker-list input[data-speaker="0"]')
    name0.fill("Anna")
    name0.press("Enter")
    expect(first.locator(".speaker")).to_have_text("Anna · ")
    expect(second.locator(".speaker")).to_have_text("Anna · ")
    page.click("#speaker-text-panel summary")
    expect(page.locator("#speaker-text p")).to_have_count(1)
    expect(page.locator("#speaker-text p").first).to_contain_text("Anna: Hello world.")
    revision(page, 0)  # a name is the project's, not a revision
    data = json.loads(page.evaluate(f"fetch('/editor/{job}/data').then((r) => r.text())"))
    assert data["speakers"]["names"] == {"0": "Anna"}, data["speakers"]

    step("speakers: the digit 1 on the second cue makes it speaker 1 (one revision, marked as set)")
    second.click()
    page.keyboard.press("1")
    revision(page, 1)
    expect(second.locator(".speaker")).to_have_text("Speaker 1 · ")
    expect(first.locator(".speaker")).to_have_text("Anna · ")
    speakers_api = [c["speaker"] for c in json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]]
    assert speakers_api == [0, 1], speakers_api
    name1 = page.locator('#speaker-list input[data-speaker="1"]')
    name1.fill("Ben")
    name1.press("Enter")
    expect(second.locator(".speaker")).to_have_text("Ben · ")
    expect(page.locator("#speaker-text p")).to_have_count(2)
    expect(page.locator("#speaker-text p").nth(1)).to_contain_text("Ben: ")
    # Not colour alone: the name is there; and the colours differ, each >= 3:1 on the list.
    stripes = page.evaluate("""Array.from(document.querySelectorAll('li.cue')).map((li) =>
        [getComputedStyle(li).borderLeftColor, getComputedStyle(document.getElementById('cues')).backgroundColor])""")
    assert stripes[0][0] != stripes[1][0], stripes
    for colour, background in stripes:
        assert contrast(colour, background) >= 3, (colour, background, contrast(colour, background))
    page.wait_for_timeout(200)
    page.screenshot(path=cfg["shots"] + "/editor-speakers.png", full_page=True)

    step("speakers: merging Ben into Anna asks first, then both cues are Anna's; undo")
    page.select_option("#merge-from", "1")
    page.select_option("#merge-into", "0")
    page.click("#merge-speakers")
    expect(page.locator("#confirm-text")).to_contain_text("Merge Ben into Anna?")
    page.click("#confirm-ok")
    revision(page, 2)
    expect(second.locator(".speaker")).to_have_text("Anna · ")
    expect(page.locator("#speaker-text p")).to_have_count(1)
    speakers_api = [c["speaker"] for c in json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]]
    assert speakers_api == [0, 0], speakers_api
    page.keyboard.press("Control+z")
    revision(page, 3)
    expect(second.locator(".speaker")).to_have_text("Ben · ")

    step("speakers: detecting again with 1 speaker asks first; the hand-set Ben is kept and takes the voice; undo")
    expect(page.locator("#redetect-count")).to_have_value("2")  # the speakers there are now
    page.select_option("#redetect-count", "1")
    page.click("#redetect-speakers")
    expect(page.locator("#confirm-text")).to_contain_text("Detect the speakers again from the audio, with 1 speaker?")
    page.click("#confirm-ok")
    revision(page, 4)
    expect(first.locator(".speaker")).to_have_text("Ben · ")
    expect(second.locator(".speaker")).to_have_text("Ben · ")
    expect(page.locator("#speaker-text p")).to_have_count(1)
    speakers_api = [c["speaker"] for c in json.loads(api(f"/v1/jobs/{job}/transcript"))["cues"]]
    assert speakers_api == [1, 1], speakers_api
    page.keyboard.press("Control+z")
    revision(page, 5)
    expect(first.locator(".speaker")).to_have_text("Anna · ")
    expect(second.locator(".speaker")).to_have_text("Ben · ")


with sync_playwright() as pw:
    # A fresh profile directory per run (Playwright passes it as --user-data-dir).
    ctx = pw.chromium.launch_persistent_context(
        cfg["profile"],
        executable_path="/usr/bin/chromium",
        headless=True,
        args=FLAGS,
        accept_downloads=True,
        viewport={"width": 1280, "height": 900},
    )
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))

    step("sign in with a one-time link")
    page.goto(BASE + cfg["link"])
    page.click("#use-link")
    expect(page).to_have_url(BASE + "/projects")
    expect(page.locator("tr[data-id]")).to_have_count(3)
    page.screenshot(path=cfg["shots"] + "/list.png", full_page=True)

    step("the list follows a running job's status without a reload")
    pending = cfg["pending"]
    badge = page.locator(f'tr[data-id="{pending["id"]}"] [data-status]')
    expect(badge).to_have_text("uploading")
    body = open(pending["media"], "rb").read()
    put = urllib.request.Request(pending["url"], data=body, method="PUT",
                                 headers={"Content-Type": "audio/wav"})
    with urllib.request.urlopen(put) as r:
        assert r.status == 200, r.status
    expect(badge).to_have_text("ready", timeout=30000)

    step("search the list")
    page.fill("input[name=q]", "video")
    page.click("form.filters button[type=submit]")
    expect(page.locator("tr[data-id]")).to_have_count(1)
    expect(page.locator("tr[data-id] a.open")).to_have_text("Interview (video)")
    page.fill("input[name=q]", "")
    page.click("form.filters button[type=submit]")

    step("open the audio job's editor from its row")
    page.click(f'tr[data-id="{cfg["audio"]}"] a.open')
    expect(page).to_have_url(BASE + "/editor/" + cfg["audio"])
    expect(page.locator("li.cue").first).to_be_visible()
    revision(page, 0)
    wait_js(page, "document.querySelector('audio') && document.querySelector('audio').readyState >= 1")

    step("play, then seek by clicking a word")
    page.click("#play")
    wait_js(page, "document.querySelector('audio').currentTime > 0.3")
    page.click("#play")
    # The speech is two sentences, and a sentence ends a cue: "Hello world." is the first cue and
    # the second sentence the second, which the word steps use.
    word = page.locator("li.cue").nth(1).locator(".w").nth(2)
    start_ms = int(word.get_attribute("data-start"))
    word.click()
    t = page.evaluate("document.querySelector('audio').currentTime")
    assert abs(t * 1000 - start_ms) < 50, (t, start_ms)
    expect(page.locator("li.cue.current")).to_have_count(1)
    expect(page.locator(".w.now")).to_have_count(1)
    page.screenshot(path=cfg["shots"] + "/editor-audio.png", full_page=True)

    step("play, then pause before playback has begun (a double click): the pause, no error")
    # The second click pauses while play() is still pending; its promise then rejects with an
    # AbortError, which is the pause asked for and must not reach the console as an error.
    page.evaluate("() => { const b = document.getElementById('play'); b.click(); b.click(); }")
    page.wait_for_timeout(300)
    assert page.evaluate("document.querySelector('audio').paused")
    assert not [e for e in errors if "play()" in e], errors

    step("edit a word")
    first = page.locator("li.cue").first
    first.focus()
    page.keyboard.press("Enter")
    area = first.locator("textarea")
    expect(area).to_be_visible()
    assert area.get_attribute("spellcheck") == "true"
    text = area.input_value()
    assert text.startswith("Hello world."), text
    area.fill(text.replace("world.", "there.", 1))
    area.press("Enter")
    revision(page, 1)
    expect(page.locator("li.cue").first).to_contain_text("Hello there.")
    assert json.loads(api(f"/v1/jobs/{cfg['audio']}/transcript"))["cues"][0]["lines"][0].startswith("Hello there.")

    step("split and merge")
    n = cue_count(page)

    def cue_starts():
        return [c.locator(".w").first.inner_text() for c in page.locator("li.cue").all()]

    def only_changed(before, after, k, named, made):
        # Every cue but cues k..k+named of `before` (k..k+made after) is byte-identical in the
        # API, text with its line breaks and times.
        assert len(after) == len(before) - named + made, (before, after)
        assert after[:k] == before[:k], (k, before, after)
        assert after[k + made:] == before[k + named:], (k, before, after)

    target = page.locator("li.cue").nth(1).locator(".w").nth(5)
    word_text = target.inner_text()
    target.click()
    before = api_cues(cfg["audio"])
    page.click("#split")
    revision(page, 2)
    # The split word now opens a cue: exactly two where there was one, nothing else moved.
    starts = cue_starts()
    assert word_text in starts, (word_text, starts)
    assert len(starts) == n + 1, (n, starts)
    only_changed(before, api_cues(cfg["audio"]), 1, 1, 2)
    # A word more in the cue before the split: the answer carries the changed cues only, the page
    # moves every later word's index by one and shows what a reload shows.
    m = starts.index(word_text) - 1
    middle = page.locator("li.cue").nth(m)
    middle.focus()
    page.keyboard.press("Enter")
    area = middle.locator("textarea")
    before = api_cues(cfg["audio"])
    area.fill("Well " + area.input_value())
    area.press("Enter")
    revision(page, 3)
    only_changed(before, api_cues(cfg["audio"]), m, 1, 1)
    shown = listing(page)
    assert any(":Well " in c for c in shown), shown
    page.reload()
    revision(page, 3)
    assert listing(page) == shown, (shown, listing(page))
    # Merged with the cue after it: the two shown cues become one.
    before_merge = cue_count(page)
    before = api_cues(cfg["audio"])
    page.locator("li.cue").nth(m).click()
    page.keyboard.press("Alt+m")
    revision(page, 4)
    assert cue_count(page) == before_merge - 1, (before_merge, listing(page))
    only_changed(before, api_cues(cfg["audio"]), m, 2, 1)

    step("set a line break, then undo it")
    def line_starts():
        return [t.split(" ")[0] for t in page.locator("li.cue .line").all_inner_texts()]

    target = page.locator("li.cue").last.locator(".w").nth(2)
    word_text = target.inner_text()
    assert word_text not in line_starts(), (word_text, line_starts())
    target.click()
    before = api_cues(cfg["audio"])
    page.click("#linebreak")
    revision(page, 5)
    assert word_text in line_starts(), (word_text, line_starts())
    last = len(before) - 1
    only_changed(before, api_cues(cfg["audio"]), last, 1, 1)
    assert api_cues(cfg["audio"])[last][2].replace("|", " ") == before[last][2].replace("|", " ")
    page.click("#undo")
    revision(page, 6)
    assert word_text not in line_starts(), line_starts()
    page.keyboard.press("Control+Shift+Z")
    revision(page, 7)
    assert word_text in line_starts(), line_starts()

    step("move a word to the next cue and back, lay out again")
    page.locator("li.cue").first.click()
    before = api_cues(cfg["audio"])
    moved = page.locator("li.cue").first.locator(".w").last.inner_text()
    page.keyboard.press("Alt+n")
    revision(page, 8)
    after = api_cues(cfg["audio"])
    only_changed(before, after, 0, 2, 2)
    assert page.locator("li.cue").nth(1).locator(".w").first.inner_text() == moved
    page.locator("li.cue").first.click()
    page.click("#movefirst")
    revision(page, 9)
    # Back where it was: the whole list as before, byte for byte.
    assert api_cues(cfg["audio"]) == before, (before, api_cues(cfg["audio"]))
    # A narrower line re-flows nothing the subtitler edited; laying everything out again is
    # asked for, with the number of cues it changes.
    page.locator("#settings-panel summary").click()
    page.fill('input[name="maxCharsPerLine"]', "16")
    page.click('#settings-form button[type="submit"]')
    revision(page, 10)
    assert api_cues(cfg["audio"]) == before, (before, api_cues(cfg["audio"]))
    page.click("#relayout-all")
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text(re.compile(r"\d+ cues? will change"))
    page.click("#confirm-ok")
    revision(page, 11)
    relaid = api_cues(cfg["audio"])
    assert relaid != before and all(len(l) <= 16 for c in relaid for l in c[2].split("|")), relaid
    download = page.evaluate(f"fetch('/editor/{cfg['audio']}/download?format=srt').then((r) => r.text())")
    assert download.encode() == api(f"/v1/jobs/{cfg['audio']}/subtitles?format=srt"), download
    page.click("#undo")
    revision(page, 12)
    # Undone twice: the settings change too (restore records the settings it applies).
    page.click("#undo")
    revision(page, 13)
    expect(page.locator('input[name="maxCharsPerLine"]')).to_have_value("42")
    assert api_cues(cfg["audio"]) == before, (before, api_cues(cfg["audio"]))

    step("a second page editing the same project gets the conflict")
    second = ctx.new_page()
    second.goto(BASE + "/editor/" + cfg["audio"])
    revision(second, 13)
    page.fill("#speaker", "2")
    page.locator("li.cue").first.click()
    page.fill("#speaker", "2")
    page.click("#speaker-cue")
    revision(page, 14)
    second.locator("li.cue").first.click()
    second.locator("li.cue").nth(1).locator(".w").nth(3).click()
    second.click("#split")
    expect(second.locator("#conflict")).to_be_visible()
    expect(second.locator("#conflict-rev")).to_have_text("14")
    second.click("#conflict-reload")
    revision(second, 14)
    second.close()

    step("restore a revision from the history")
    page.reload()
    revision(page, 14)
    page.click('#history li[data-revision="0"] button')
    # Restoring changes many cues: the page asks first.
    expect(page.locator("#confirm-text")).to_contain_text("revision 0")
    page.click("#confirm-ok")
    revision(page, 15)
    expect(page.locator("li.cue").first).to_contain_text("Hello world.")

    step("merge two cues the layout cut at a sentence end (no manual break)")
    n = cue_count(page)
    page.locator("li.cue").first.click()
    page.click("#merge")
    revision(page, 16)
    assert cue_count(page) == n - 1, (n, cue_count(page))
    expect(page.locator("li.cue").first).to_contain_text("Hello world.")
    expect(page.locator("li.cue").first).to_contain_text("subtitles.")
    page.screenshot(path=cfg["shots"] + "/editor-merged.png", full_page=True)

    step("an end pulled earlier than reading pace allows: refused, saying why, no revision")
    end_before = page.locator("li.cue").first.get_attribute("aria-label")
    history_before = page.locator("#history li").count()
    page.locator("li.cue").first.click()
    page.click("#end-minus")
    expect(page.locator("#notice")).to_be_visible()
    expect(page.locator("#notice")).to_contain_text("end stays at")
    revision(page, 16)
    assert page.locator("li.cue").first.get_attribute("aria-label") == end_before
    assert page.locator("#history li").count() == history_before
    # The browser logs the refused edit (400) as a console error: the one expected here.
    assert sum("400" in e for e in errors) == 1, errors
    errors[:] = [e for e in errors if "400" not in e]
    assert json.loads(api(f"/v1/jobs/{cfg['audio']}"))  # the job is still there
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=cfg["shots"] + "/editor-nudge-refused.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    step("change a layout setting: edited cues keep their lines until laid out again")
    lines_before = page.locator("li.cue .line").all_inner_texts()
    if not page.locator("#settings-panel").evaluate("(d) => d.open"):
        page.click("#settings-panel summary")
    page.fill('#settings-form input[name="maxCharsPerLine"]', "16")
    page.click("#settings-form button[type=submit]")
    revision(page, 17)
    expect(page.locator('#settings-form input[name="maxCharsPerLine"]')).to_have_value("16")
    assert page.locator("li.cue .line").all_inner_texts() == lines_before
    expect(page.locator("#history")).to_contain_text("Layout settings: maxCharsPerLine 16")
    page.click("#relayout-all")
    expect(page.locator("#confirm-text")).to_contain_text(re.compile(r"\d+ cues? will change"))
    page.click("#confirm-ok")
    revision(page, 18)
    assert page.locator("li.cue .line").count() > len(lines_before)
    assert max(len(t) for t in page.locator("li.cue .line").all_inner_texts()) <= 16

    step("undo brings the layout and the settings back (a settings change is a revision)")
    page.click("#undo")
    revision(page, 19)
    page.click("#undo")
    revision(page, 20)
    expect(page.locator('#settings-form input[name="maxCharsPerLine"]')).to_have_value("42")
    wait_js(page, "Array.from(document.querySelectorAll('li.cue .line')).some((l) => l.textContent.length > 16)")
    page.screenshot(path=cfg["shots"] + "/editor-settings-undone.png", full_page=True)

    step("download every format: the API's bytes")
    for fmt in ["srt", "vtt", "ttml", "ass", "ebu-stl"]:
        with page.expect_download() as info:
            page.click(f'a.download[data-format="{fmt}"]')
        path = info.value.path()
        ours = open(path, "rb").read()
        theirs = api(f"/v1/jobs/{cfg['audio']}/subtitles?format={fmt}")
        assert ours == theirs, fmt
        print("  ", fmt, len(ours), "bytes equal", flush=True)

    step("a lead-in set in the panel: the editor's downloads start cues earlier, the API's do not")
    page.fill('#settings-form input[name="inCueLeadInFrames"]', "2")
    page.click("#settings-form button[type=submit]")
    revision(page, 21)
    expect(page.locator("#history")).to_contain_text("Layout settings: inCueLeadInFrames 2")
    with page.expect_download() as info:
        page.click('a.download[data-format="srt"]')
    ours = open(info.value.path(), "rb").read().decode()
    theirs = api(f"/v1/jobs/{cfg['audio']}/subtitles?format=srt").decode()

    def ms(t):
        h, m, rest = t.split(":")
        sec, milli = rest.split(",")
        return ((int(h) * 60 + int(m)) * 60 + int(sec)) * 1000 + int(milli)

    first = lambda srt: next(l for l in srt.splitlines() if " --> " in l).split(" --> ")
    (o_start, o_end), (t_start, t_end) = first(ours), first(theirs)
    # 2 frames at 25 fps: 80 ms earlier (never before 0); the end and the text as they were.
    assert ms(o_start) == max(0, ms(t_start) - 80) and o_end == t_end, (o_start, t_start)
    assert ours != theirs and ours.count(" --> ") == theirs.count(" --> ")
    print("   first cue", t_start, "->", o_start, flush=True)
    page.click("#undo")
    revision(page, 22)
    expect(page.locator('#settings-form input[name="inCueLeadInFrames"]')).to_have_value("0")
    with page.expect_download() as info:
        page.click('a.download[data-format="srt"]')
    assert open(info.value.path(), "rb").read() == api(f"/v1/jobs/{cfg['audio']}/subtitles?format=srt")

    step("an edit of the original offers itself to the clean version, which takes it")
    audio = cfg["audio"]
    clean_id = next(t["id"] for t in json.loads(api(f"/v1/jobs/{audio}"))["transcripts"] if t["kind"] == "clean")
    def clean_text():
        return api(f"/v1/jobs/{audio}/transcript?format=text&transcriptId={clean_id}").decode()
    before = clean_text()
    assert "test" in before and "trial" not in before, before
    k = next(i for i, li in enumerate(page.locator("li.cue .text").all_inner_texts()) if "test" in li)
    area = open_text(page, k)
    area.fill(area.input_value().replace("test", "trial", 1))
    page.keyboard.press("Tab")
    expect(page.locator("#carry")).to_be_visible()
    expect(page.locator("#carry-text")).to_contain_text("Make the same change in")
    page.click("#carry-apply")
    expect(page.locator("#carry")).to_be_hidden()
    wait_js(page, "/same change in the clean version/.test(document.getElementById('notice').textContent)")
    assert clean_text() == before.replace("test", "trial", 1), (before, clean_text())

    step("the clean version side by side with the original")
    page.select_option("#transcript", label="Clean version (en)")
    expect(page.locator("#beside-head")).to_be_visible()
    expect(page.locator("#beside-this")).to_have_text("Clean version (en)")
    expect(page.locator("#beside-original")).to_have_text("Original (en)")
    expect(page.locator("li.cue .source").first).to_contain_text("Hello")
    own = page.locator("li.cue .text").first.bounding_box()
    orig = page.locator("li.cue .source").first.bounding_box()
    assert orig["x"] >= own["x"] + own["width"] - 1 and abs(orig["y"] - own["y"]) < 30, (own, orig)
    page.screenshot(path=cfg["shots"] + "/editor-clean-beside.png", full_page=True)
    page.select_option("#transcript", index=0)
    expect(page.locator("#beside-head")).to_be_hidden()

    step("import a translation from an SRT file: shown beside the original")
    srt_path = cfg["profile"] + "-nl.srt"
    # Timed on the job's frames (25 a second), as a subtitler's file is.
    srt = ("1\r\n00:00:00,120 --> 00:00:01,000\r\nHallo wereld.\r\n\r\n"
           "2\r\n00:00:01,200 --> 00:00:03,000\r\nDit is een test\r\nvan de ondertitels.\r\n\r\n")
    with open(srt_path, "w", encoding="utf-8", newline="") as f:
        f.write(srt)
    page.click("#translate-panel summary")
    page.fill('#translate-form input[name="language"]', "nl")
    page.fill('#translate-form input[name="label"]', "Nederlands")
    page.check('#translate-form input[value="file"]')
    page.set_input_files('#translate-form input[type="file"]', srt_path)
    page.click("#translate-form button[type=submit]")
    expect(page.locator("#transcript")).to_have_value(re.compile("[0-9a-f]{24}"))
    expect(page.locator("li.cue").first).to_contain_text("Hallo wereld.")
    expect(page.locator("li.cue .source").first).to_contain_text("Hello")
    expect(page.locator("#transcript option:checked")).to_have_text("Nederlands (nl)")
    page.screenshot(path=cfg["shots"] + "/editor-translation.png", full_page=True)
    nl = api(f"/v1/jobs/{cfg['audio']}/subtitles?language=nl").decode()
    assert nl == srt, ("an imported SRT downloads back identical", nl)
    page.select_option("#transcript", index=0)
    expect(page.locator("li.cue").first).to_contain_text("Hello world.")

    step("the original, the clean version and a translation download under their own names")
    def disposition(path):
        return page.evaluate(f"fetch('{path}').then((r) => r.headers.get('content-disposition'))")
    names = set()
    for t in json.loads(api(f"/v1/jobs/{cfg['audio']}"))["transcripts"]:
        names.add(disposition(f"/editor/{cfg['audio']}/download?format=srt&transcript={t['id']}"))
    print("   ", sorted(names), flush=True)
    assert len(names) == len(json.loads(api(f"/v1/jobs/{cfg['audio']}"))["transcripts"]), names

    step("another organisation's project is 404")
    resp = page.goto(BASE + "/editor/" + cfg["foreign"])
    assert resp.status == 404, resp.status
    # The browser logs that 404 as a console error: the one expected error of the run.
    assert all("404" in e for e in errors), errors
    errors.clear()

    step("the video job shows its picture")
    page.goto(BASE + "/editor/" + cfg["video"])
    expect(page.locator("li.cue").first).to_be_visible()
    wait_js(page, "document.querySelector('video') && document.querySelector('video').readyState >= 2", 15000)
    page.evaluate("document.querySelector('video').currentTime = 1.0")
    page.wait_for_timeout(500)
    page.screenshot(path=cfg["shots"] + "/editor-video.png", full_page=True)

    nothing_lost(page, ctx, errors)
    find_and_replace(page)
    the_timeline(page)
    speakers(page)
    one_screen(page)

    assert not errors, errors
    ctx.close()
print("browser checks passed", flush=True)
