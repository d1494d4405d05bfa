//! The metrics every process records and `--metrics-listen` serves in the Prometheus text format.
//!
//! The rooms record through the `metrics` facade (the functions below, one per thing measured,
//! so every name and label lives here); nothing is recorded until [`install`] sets the process's
//! recorder, which a process does only when it serves `/metrics`. Rendering is
//! `metrics-exporter-prometheus`'s. Gauges that describe the shared store (the queue) are read
//! from it at scrape time by the caller of [`render`] and set with [`queue`].

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Latency buckets in seconds: 1 ms to 60 s.
const LATENCY: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Recognition of one job: a second to three hours.
const RECOGNITION: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 10800.0,
];
/// Seconds of processing per second of audio.
const REAL_TIME_FACTOR: &[f64] = &[0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0];

/// Installs the process's recorder (once; later calls return the same answer) and starts its
/// upkeep thread; whether metrics are recorded.
pub fn install() -> bool {
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(RECOGNITION_SECONDS.into()), RECOGNITION)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(REAL_TIME_FACTOR_NAME.into()),
                        REAL_TIME_FACTOR,
                    )
                })
                .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY))
                .and_then(|b| b.install_recorder());
            let handle = match handle {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("metrics are not recorded: {e}");
                    return None;
                }
            };
            describe();
            let upkeep = handle.clone();
            // Drains the histograms' recent samples into their buckets, so memory stays bounded
            // however rarely the process is scraped.
            let started = std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkeep.run_upkeep();
                });
            if let Err(e) = started {
                tracing::warn!("metrics upkeep thread: {e}");
            }
            Some(handle)
        })
        .is_some()
}

/// The metrics in the Prometheus text format (version 0.0.4); `None` before [`install`].
pub fn render() -> Option<String> {
    let handle = HANDLE.get()?.as_ref()?;
    handle.run_upkeep();
    Some(handle.render())
}

const RECOGNITION_SECONDS: &str = "cuecraft_recognition_duration_seconds";
const REAL_TIME_FACTOR_NAME: &str = "cuecraft_recognition_real_time_factor";

fn describe() {
    describe_counter!(
        "cuecraft_http_requests_total",
        "HTTP requests answered, by route template, method and status."
    );
    describe_histogram!(
        "cuecraft_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer an HTTP request (to its response head), by route template."
    );
    describe_counter!(
        "cuecraft_jobs_created_total",
        "Jobs created through POST /v1/jobs in this process."
    );
    describe_counter!(
        "cuecraft_jobs_finished_total",
        "Jobs this process's workers finished, by status (ready or failed)."
    );
    describe_gauge!(
        "cuecraft_queue_waiting_tasks",
        "Pipeline tasks waiting for a worker (the whole store's queue)."
    );
    describe_gauge!(
        "cuecraft_queue_running_tasks",
        "Pipeline tasks held by a worker under a live lease (the whole store's queue)."
    );
    describe_gauge!(
        "cuecraft_queue_oldest_waiting_age_seconds",
        metrics::Unit::Seconds,
        "How long the oldest waiting task has been in the queue; 0 when none waits."
    );
    describe_gauge!(
        "cuecraft_store_up",
        "1 when the store answered the last scrape's queue query, else 0."
    );
    describe_histogram!(
        RECOGNITION_SECONDS,
        metrics::Unit::Seconds,
        "Wall-clock time of one job's speech recognition, by recognizer."
    );
    describe_histogram!(
        REAL_TIME_FACTOR_NAME,
        "Recognition time per second of audio of one job, by recognizer."
    );
    describe_gauge!(
        "cuecraft_workers",
        "Pipeline worker threads of this process, by state (busy or idle)."
    );
    describe_histogram!(
        "cuecraft_store_call_duration_seconds",
        metrics::Unit::Seconds,
        "Time of one unit of store work, by caller (api, web or worker)."
    );
    describe_histogram!(
        "cuecraft_media_store_call_duration_seconds",
        metrics::Unit::Seconds,
        "Time of one media store operation, by operation."
    );
    describe_counter!(
        "cuecraft_ledger_errors_total",
        "Ledger (billing) operations that failed and were retried or refused."
    );
    describe_gauge!(
        "cuecraft_uploads_in_flight",
        "Uploads this process is receiving now."
    );
}

/// One answered HTTP request.
pub fn http_request(route: &'static str, method: &str, status: u16, took: Duration) {
    counter!("cuecraft_http_requests_total",
        "route" => route, "method" => method.to_string(), "status" => status.to_string())
    .increment(1);
    histogram!("cuecraft_http_request_duration_seconds", "route" => route)
        .record(took.as_secs_f64());
}

/// A job created.
pub fn job_created() {
    counter!("cuecraft_jobs_created_total").increment(1);
}

/// A job's pipeline ended: `ready` or `failed`.
pub fn job_finished(status: &'static str) {
    counter!("cuecraft_jobs_finished_total", "status" => status).increment(1);
}

/// The store's queue at a scrape (`None`: the store did not answer).
pub fn queue(stats: Option<(i64, i64, Option<Duration>)>) {
    let Some((waiting, running, oldest)) = stats else {
        gauge!("cuecraft_store_up").set(0.0);
        return;
    };
    gauge!("cuecraft_store_up").set(1.0);
    gauge!("cuecraft_queue_waiting_tasks").set(waiting as f64);
    gauge!("cuecraft_queue_running_tasks").set(running as f64);
    gauge!("cuecraft_queue_oldest_waiting_age_seconds")
        .set(oldest.map_or(0.0, |d| d.as_secs_f64()));
}

/// One job's recognition: `audio` seconds of media recognised in `took`.
pub fn recognition(recognizer: &str, audio: f64, took: Duration) {
    let name = recognizer.to_string();
    histogram!(RECOGNITION_SECONDS, "recognizer" => name.clone()).record(took.as_secs_f64());
    if audio > 0.0 {
        histogram!(REAL_TIME_FACTOR_NAME, "recognizer" => name).record(took.as_secs_f64() / audio);
    }
}

/// A worker thread's state changed: `busy` threads hold a task, `idle` ones wait for one.
pub fn worker_state(from: Option<&'static str>, to: Option<&'static str>) {
    if let Some(from) = from {
        gauge!("cuecraft_workers", "state" => from).decrement(1.0);
    }
    if let Some(to) = to {
        gauge!("cuecraft_workers", "state" => to).increment(1.0);
    }
}

/// One unit of store work by `caller` (`api`, `web`, `worker`), started at `since`.
pub fn store_call(caller: &'static str, since: Instant) {
    histogram!("cuecraft_store_call_duration_seconds", "caller" => caller)
        .record(since.elapsed().as_secs_f64());
}

/// One media store operation `op`, started at `since`.
pub fn media_call(op: &'static str, since: Instant) {
    histogram!("cuecraft_media_store_call_duration_seconds", "op" => op)
        .record(since.elapsed().as_secs_f64());
}

/// A ledger operation failed.
pub fn ledger_error() {
    counter!("cuecraft_ledger_errors_total").increment(1);
}

/// An upload being received: counted in `cuecraft_uploads_in_flight` until dropped.
pub struct Upload(());

impl Upload {
    pub fn start() -> Upload {
        gauge!("cuecraft_uploads_in_flight").increment(1.0);
        Upload(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        gauge!("cuecraft_uploads_in_flight").decrement(1.0);
    }
}
