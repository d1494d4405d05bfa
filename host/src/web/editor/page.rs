//! GET /editor/{id}: the page shell (HTML); `editor.js` loads the rest.

use std::sync::Arc;

use hyper::Response;

use crate::http::{App, Body};

use super::super::{db, esc, html, page as html_page, require_session, WebError, WebRequest};
use super::{check_id, visible};

/// GET /editor/{id}: the page shell; `editor.js` loads the rest.
pub async fn page(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    let job = db(app, move |c| visible(c, &viewer, &jid)).await?;
    let formats = [
        ("srt", "SRT"),
        ("vtt", "WebVTT"),
        ("ttml", "TTML"),
        ("ass", "ASS"),
        ("ebu-stl", "EBU-STL"),
    ];
    let downloads: String = formats
        .iter()
        .map(|(f, label)| {
            format!("<a class=\"button download\" data-format=\"{f}\" href=\"/editor/{id}/download?format={f}\">{label}</a>")
        })
        .collect();
    let body = format!(
        "<section class=\"editor\" id=\"editor\" data-job=\"{id}\">\
         <div class=\"bar\"><h1 id=\"job-name\">{name}</h1>\
         <span class=\"status status-{status}\" id=\"job-status\">{status}</span>\
         <span id=\"save-state\" role=\"status\" aria-live=\"polite\"></span>\
         <span id=\"qc\" class=\"qc\" title=\"Checked against the job's settings\"></span>\
         <select id=\"transcript\" aria-label=\"Transcript\"></select>\
         <button type=\"button\" id=\"help-open\" aria-haspopup=\"dialog\">Shortcuts (?)</button></div>\
         <div id=\"conflict\" class=\"banner\" role=\"alert\" hidden>Someone else changed this \
         transcript (now revision <span id=\"conflict-rev\"></span>). Your last change was not saved. \
         <button type=\"button\" id=\"conflict-reload\">Load their version</button></div>\
         <div id=\"problem\" class=\"banner\" role=\"alert\" hidden></div>\
         <div id=\"notice\" class=\"banner notice\" role=\"status\" hidden></div>\
         <div id=\"carry\" class=\"banner notice\" role=\"status\" hidden><span id=\"carry-text\"></span> \
         <button type=\"button\" id=\"carry-apply\">Apply to the clean version</button> \
         <button type=\"button\" id=\"carry-dismiss\">Not there</button></div>\
         <div class=\"player\"><div id=\"picture\"></div>\
         <canvas id=\"wave\" height=\"96\" aria-label=\"Waveform: click to seek\"></canvas>\
         <div class=\"transport\"><button type=\"button\" id=\"play\">Play</button>\
         <span id=\"clock\">0:00.000</span></div></div>\
         <div class=\"tools\">\
         <button type=\"button\" id=\"undo\" disabled>Undo</button>\
         <button type=\"button\" id=\"redo\" disabled>Redo</button>\
         <button type=\"button\" id=\"split\">Split at word</button>\
         <button type=\"button\" id=\"merge\">Merge with next</button>\
         <button type=\"button\" id=\"linebreak\">Line break before word</button>\
         <button type=\"button\" id=\"movelast\">Last word to next cue</button>\
         <button type=\"button\" id=\"movefirst\">Next cue's first word back</button>\
         <span class=\"group\"><label>Lay out cues <input type=\"number\" id=\"relayout-from\" min=\"1\" value=\"1\"></label>\
         <label>to <input type=\"number\" id=\"relayout-to\" min=\"1\" value=\"1\"></label>\
         <button type=\"button\" id=\"relayout\">Lay out again…</button>\
         <button type=\"button\" id=\"relayout-all\">Lay out all again…</button></span>\
         <span class=\"group\">Start <button type=\"button\" id=\"start-minus\" aria-label=\"Start −1 frame\" title=\"Start −1 frame (Alt+[)\">−1 frame</button>\
         <button type=\"button\" id=\"start-plus\" aria-label=\"Start +1 frame\" title=\"Start +1 frame (Alt+])\">+1 frame</button></span>\
         <span class=\"group\">End <button type=\"button\" id=\"end-minus\" aria-label=\"End −1 frame\" title=\"End −1 frame (Alt+Shift+[)\">−1 frame</button>\
         <button type=\"button\" id=\"end-plus\" aria-label=\"End +1 frame\" title=\"End +1 frame (Alt+Shift+])\">+1 frame</button></span>\
         <span class=\"group\"><label>Speaker <input type=\"number\" id=\"speaker\" min=\"0\" max=\"99\" value=\"0\"></label>\
         <button type=\"button\" id=\"speaker-cue\">Set speaker for cue</button>\
         <button type=\"button\" id=\"speaker-all\">Set speaker everywhere</button></span>\
         <form id=\"find-form\" class=\"group\"><input id=\"find\" placeholder=\"Find\" aria-label=\"Find\" aria-describedby=\"find-count\">\
         <label><input type=\"checkbox\" id=\"find-case\"> Match case</label>\
         <label><input type=\"checkbox\" id=\"find-whole\"> Whole words</label>\
         <span id=\"find-count\" role=\"status\" aria-live=\"polite\"></span>\
         <button type=\"submit\" id=\"find-next\">Find next</button>\
         <input id=\"replace\" placeholder=\"Replace with\" aria-label=\"Replace with\">\
         <button type=\"button\" id=\"replace-all\">Replace all…</button></form></div>\
         <div class=\"columns\"><div class=\"cue-pane\">\
         <div class=\"cue-filter\"><label><input type=\"checkbox\" id=\"problems-only\"> Problems only</label>\
         <button type=\"button\" id=\"prev-problem\" title=\"Shift+F8\">Previous problem</button>\
         <button type=\"button\" id=\"next-problem\" title=\"F8\">Next problem</button></div>\
         <div id=\"beside-head\" class=\"beside-head\" hidden><span id=\"beside-this\"></span>\
         <span id=\"beside-original\"></span></div>\
         <ol id=\"cues\" class=\"cues\" aria-label=\"Cues (one Tab stop: ↑ ↓ move between cues, Enter edits)\"></ol></div>\
         <aside><details id=\"settings-panel\"><summary>Layout settings</summary>\
         <form id=\"settings-form\" class=\"settings\">\
         <label>Characters per line <input type=\"number\" name=\"maxCharsPerLine\" min=\"10\" max=\"250\"></label>\
         <label>Lines per subtitle <input type=\"number\" name=\"maxLinesPerSubtitle\" min=\"1\" max=\"5\"></label>\
         <label>Frames between subtitles <input type=\"number\" name=\"minFramesBetweenSubtitles\" min=\"0\" max=\"100\"></label>\
         <label>Reading pace <select name=\"contentProfile\"><option value=\"balanced\">balanced (17 CPS)</option>\
         <option value=\"dense\">dense (20 CPS)</option><option value=\"dramatic\">dramatic (15 CPS)</option>\
         <option value=\"auto\">auto</option></select></label>\
         <label>Mode <select name=\"subtitleMode\"><option value=\"default\">default</option>\
         <option value=\"audiogram\">audiogram</option></select></label>\
         <label>Shift (ms) <input type=\"number\" name=\"shiftMs\" min=\"-10000\" max=\"10000\"></label>\
         <label title=\"Downloads from the editor show each subtitle this many frames before its first word\">\
         Lead-in (frames) <input type=\"number\" name=\"inCueLeadInFrames\" min=\"0\" max=\"25\"></label>\
         <label><input type=\"checkbox\" name=\"formatSubtitles\"> Smart formatting</label>\
         <label><input type=\"checkbox\" name=\"splitOnPunctuation\"> Split on punctuation</label>\
         <label><input type=\"checkbox\" name=\"emDashOnSpeakerChange\"> Dash on speaker change</label>\
         <label><input type=\"checkbox\" name=\"ellipsisContinuation\"> Ellipsis continuation</label>\
         <button type=\"submit\">Apply settings</button></form></details>\
         <details id=\"translate-panel\"><summary>Add a translation</summary>\
         <form id=\"translate-form\" class=\"settings\">\
         <label>Language <input name=\"language\" placeholder=\"nl\" required maxlength=\"20\"></label>\
         <label>Label <input name=\"label\" placeholder=\"Dutch\" maxlength=\"100\"></label>\
         <label><input type=\"radio\" name=\"from\" value=\"original\" checked> Copy the original to type over</label>\
         <label><input type=\"radio\" name=\"from\" value=\"file\"> Import a subtitle file</label>\
         <input type=\"file\" name=\"file\" accept=\".srt,.vtt,.ttml,.xml,.dfxp,.ass,.ssa,.stl\" aria-label=\"Subtitle file\">\
         <button type=\"submit\">Add translation</button></form></details>\
         <h2>Download</h2><div class=\"downloads\">{downloads}</div>\
         <h2>History</h2><ol id=\"history\" class=\"history\"></ol></aside></div>\
         <dialog id=\"help\" aria-label=\"Keyboard shortcuts\"><h2>Keyboard shortcuts</h2><dl>\
         <dt>Ctrl+Space or Alt+P</dt><dd>Play / pause (also while typing)</dd>\
         <dt>Alt+R</dt><dd>Replay the cue (from its start, pausing at its end)</dd>\
         <dt>Alt+J</dt><dd>Back 2 seconds</dd>\
         <dt>F8 / Shift+F8</dt><dd>Next / previous cue with a warning</dd>\
         <dt>Enter in Find</dt><dd>Find next (Enter in “Replace with”: replace all, after a preview)</dd>\
         <dt>Alt+↓ / Alt+↑ (or J / K outside a text box)</dt><dd>Next / previous cue</dd>\
         <dt>Tab</dt><dd>The cue list is one stop: ↑ / ↓, Home / End move inside it</dd>\
         <dt>Enter on a cue</dt><dd>Edit its text (Enter saves, Escape cancels)</dd>\
         <dt>← / → on a cue</dt><dd>Previous / next word (seeks to it)</dd>\
         <dt>Alt+S</dt><dd>Split the cue before the selected word</dd>\
         <dt>Alt+M</dt><dd>Merge the cue with the next</dd>\
         <dt>Alt+L</dt><dd>Line break before the selected word</dd>\
         <dt>Alt+N</dt><dd>Move the cue's last word to the next cue</dd>\
         <dt>Alt+B</dt><dd>Move the next cue's first word back into this cue</dd>\
         <dt>Alt+[ / Alt+]</dt><dd>Cue start one frame earlier / later</dd>\
         <dt>Alt+Shift+[ / Alt+Shift+]</dt><dd>Cue end one frame earlier / later (presses in a row are one revision)</dd>\
         <dt>Alt+I / Alt+O</dt><dd>Cue start / end at the playhead</dd>\
         <dt>0 … 9 (outside a text box)</dt><dd>Speaker 0 … 9 for the selected cue (Shift+click in the list selects several)</dd>\
         <dt>Shift+0 … Shift+9</dt><dd>Speaker 0 … 9 from the selected word to the next speaker change</dd>\
         <dt>Ctrl+Z / Ctrl+Shift+Z</dt><dd>Undo / redo</dd>\
         <dt>?</dt><dd>This sheet</dd></dl>\
         <button type=\"button\" id=\"help-close\">Close</button></dialog></section>",
        id = esc(id),
        name = esc(&job.name),
        status = esc(&job.status),
    );
    Ok(html(
        200,
        html_page(&job.name, Some(&session), &body, &["editor.js"]),
    ))
}
