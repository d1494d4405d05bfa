// The project list: refreshes the status of jobs that are still running, every 3 seconds.
const FINAL = new Set(["ready", "failed"]);

function running() {
  return [...document.querySelectorAll("tr[data-id]")].filter(
    (tr) => !FINAL.has(tr.querySelector("[data-status]")?.dataset.status),
  );
}

// "42% · about 3 min left": the share of the recording recognised and the time left.
function progressText({ share, secondsLeft }) {
  const percent = `${Math.floor(share * 100)}%`;
  if (secondsLeft == null) return percent;
  const left = secondsLeft < 60 ? "under a minute" : `about ${Math.round(secondsLeft / 60)} min`;
  return `${percent} · ${left} left`;
}

async function refresh() {
  const rows = running();
  if (rows.length === 0) return;
  const ids = rows.map((tr) => tr.dataset.id).join(",");
  try {
    const resp = await fetch(`/projects/status?ids=${ids}`, { headers: { Accept: "application/json" } });
    if (resp.ok) {
      const { jobs } = await resp.json();
      for (const job of jobs) {
        const tr = document.querySelector(`tr[data-id="${job.id}"]`);
        const badge = tr?.querySelector("[data-status]");
        if (!badge) continue;
        badge.dataset.status = job.status;
        badge.textContent = job.progress ? `${job.status} ${progressText(job.progress)}` : job.status;
        badge.className = `status status-${job.status}`;
        const upd = tr.querySelector(".updated");
        if (upd) upd.textContent = job.updated;
      }
    }
  } catch (_) {
    // The server is restarting: try again next time.
  }
  if (running().length > 0) setTimeout(refresh, 3000);
}

setTimeout(refresh, 3000);
