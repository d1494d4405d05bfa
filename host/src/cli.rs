//! `cuecraft serve`, `cuecraft worker` and `cuecraft admin`: argument shapes and entry points.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::http::health::Health;
use crate::http::ratelimit::StoreLimiter;
use crate::http::{App, Config};
use crate::ops::log::LogFormat;
use crate::pipeline::{Pipeline, WorkDir};
use crate::store::Store;

pub use crate::admin::AdminArgs;
pub use crate::backend::BackendArgs;

/// The speech recognizer of the workers.
#[derive(Debug, Clone, clap::Args)]
pub struct RecognizerArgs {
    /// Speech recognizer: whisper (Whisper base, multilingual), pocketsphinx (English, light),
    /// whisper-cpp:BIN:MODEL or command:PATH.
    #[arg(long, default_value = "whisper")]
    pub recognizer: String,
    /// The whisper recognizer's model directory (assembled and verified by scripts/setup).
    #[arg(
        long,
        env = "CUECRAFT_WHISPER_MODEL",
        default_value = ".models/whisper-base"
    )]
    pub whisper_model: PathBuf,
    /// The Python interpreter of the venv that holds faster-whisper (made by scripts/setup).
    #[arg(
        long,
        env = "CUECRAFT_WHISPER_PYTHON",
        default_value = ".venv/bin/python3"
    )]
    pub whisper_python: PathBuf,
    /// The whisper recognizer's beam size: 2 (the default) decodes with 12-14% less CPU than 5
    /// and as well on the held-out recognition corpus; 1 (greedy) drops words and languages
    /// (docs/decisions/pipeline.md, "whisper"; BENCHMARKS.md, "Recognition").
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub whisper_beam: u32,
    /// How long a worker's claim on a job holds without a heartbeat, in milliseconds: a worker
    /// killed mid-job has its job taken over this long after its last heartbeat (for tests).
    #[arg(long, hide = true, default_value_t = crate::pipeline::DEFAULT_LEASE_MS,
          value_parser = clap::value_parser!(i64).range(300..=3_600_000))]
    pub lease_ms: i64,
}

/// Run the /v1 job API (and, unless `--workers 0`, the media pipeline in the same process).
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The address clients reach the server at; links and upload URLs start with it.
    #[arg(long)]
    pub public_url: Option<String>,
    #[command(flatten)]
    pub recognizer: RecognizerArgs,
    /// Jobs processed at the same time in this process; 0 serves the API only (jobs are then
    /// processed by `cuecraft worker` processes on the same store).
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Price of a minute of media, in cents.
    #[arg(long, default_value_t = 10)]
    pub price_cents_per_minute: i64,
    /// Requests per rolling minute per API key.
    #[arg(long, default_value_t = 120)]
    pub rate_limit_per_minute: u32,
    /// Address to serve GET /metrics on (Prometheus text format; DEPLOY.md); none by default.
    /// Keep it off the public network: it needs no key.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Take a request's id from its `X-Request-Id` header (set it behind a proxy that sets or
    /// replaces that header); otherwise every request gets a new id.
    #[arg(long)]
    pub trust_request_id: bool,
    /// Log lines as text or as JSON objects (one per line, for log shippers).
    #[arg(long, value_enum, env = "CUECRAFT_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Run the media pipeline without serving HTTP: claims jobs from the store's queue.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub recognizer: RecognizerArgs,
    /// Jobs processed at the same time.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub workers: u64,
    /// Address to serve GET /healthz and GET /readyz on (DEPLOY.md); none by default.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Address to serve GET /metrics on (Prometheus text format; DEPLOY.md); none by default.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Log lines as text or as JSON objects (one per line, for log shippers).
    #[arg(long, value_enum, env = "CUECRAFT_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Reads the upload-signing secret of `data_dir`, creating it (mode 0600) on first start.
fn signing_secret(data_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = data_dir.join("signing.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let text = text.trim();
            if text.len() < 32 {
                anyhow::bail!("{} is too short to be a signing secret", path.display());
            }
            Ok(text.as_bytes().to_vec())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret = crate::util::hex(&crate::util::random_bytes::<32>()?);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            writeln!(f, "{secret}")?;
            f.sync_all()?;
            Ok(secret.into_bytes())
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Records the public URL for the links `admin` prints, and on a data directory without any
/// organisation prints the one command that creates an organisation, its owner, an API key and a
/// sign-in link.
fn first_run_hint(store: &dyn Store, data_dir: &Path, public_url: &str, format: LogFormat) {
    if let Err(e) = std::fs::write(
        data_dir.join(crate::admin::PUBLIC_URL_FILE),
        format!("{public_url}\n"),
    ) {
        tracing::warn!("could not record the public URL: {e}");
    }
    if store.is_empty().unwrap_or(false) {
        let exe = std::env::args()
            .next()
            .unwrap_or_else(|| "cuecraft".to_string());
        if format == LogFormat::Json {
            // A log shipper reads every line as JSON: the hint is one event like any other.
            tracing::info!(
                command = %format!("{exe} admin --data-dir {} quickstart", data_dir.display()),
                "this data directory has no organisation yet: run the command for an owner, an \
                 API key and a sign-in link"
            );
            return;
        }
        eprintln!(
            "\nThis data directory has no organisation yet. To create one with an owner, an API \
             key and a sign-in link, run in another terminal:\n\n    {exe} admin --data-dir {dir} \
             quickstart\n\nthen open the signInUrl it prints (valid 15 minutes) and use the key as \
             `Authorization: Bearer KEY` on {public_url}/v1.\n",
            dir = data_dir.display(),
        );
    }
}

/// Completes on ctrl-c or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutting down");
}

/// The recognizer of `args`, checked (one clear line when whisper's model is missing), for
/// `workers` jobs at a time; none for an API-only server (0 workers), which needs none installed.
fn recognizer(
    args: &RecognizerArgs,
    workers: usize,
) -> anyhow::Result<Option<Arc<dyn crate::pipeline::recognizers::Recognizer>>> {
    if workers == 0 {
        return Ok(None);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let whisper = crate::pipeline::recognizers::WhisperOptions {
        python: args.whisper_python.clone(),
        model: args.whisper_model.clone(),
        beam: args.whisper_beam,
        // The workers share the cores: each whisper process decodes on its share.
        threads: (cores / workers.max(1)).max(1),
        processes: workers.max(1),
    };
    if args.recognizer == "whisper" {
        crate::pipeline::recognizers::check_whisper_installation(&whisper)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(Some(Arc::from(
        crate::pipeline::recognizers::from_spec_with(&args.recognizer, &whisper)
            .map_err(anyhow::Error::msg)?,
    )))
}

/// The pipeline of a process with `workers` worker threads (none: an API-only `serve`).
fn pipeline(
    store: &Arc<dyn Store>,
    media: &Arc<dyn crate::media::MediaStore>,
    backend: &BackendArgs,
    recognizer: Option<Arc<dyn crate::pipeline::recognizers::Recognizer>>,
    lease_ms: i64,
    workers: usize,
) -> anyhow::Result<Arc<Pipeline>> {
    let work = if workers == 0 {
        None
    } else {
        Some(WorkDir::claim(&backend.data_dir.join("work"))?)
    };
    let pipeline = Arc::new(Pipeline {
        store: store.clone(),
        queue: store.wake(),
        stop: Default::default(),
        recognizer,
        data_dir: backend.data_dir.clone(),
        work,
        lease_ms,
        running: Default::default(),
        media: media.clone(),
        sweep_every: std::time::Duration::from_secs(backend.sweep_seconds),
    });
    pipeline.recover()?;
    Ok(pipeline)
}

/// Stops the workers: they finish their current step within 5 s, else their tasks are given back
/// to the queue (due at once) for the next worker to redo.
fn stop_workers(pipeline: &Pipeline, workers: Vec<std::thread::JoinHandle<()>>) {
    pipeline.stop();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    for w in workers {
        while !w.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if w.is_finished() {
            let _ = w.join();
        }
    }
    pipeline.release_running();
}

/// Runs the server until it is stopped.
pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    crate::ops::log::init(args.log_format);
    if args.price_cents_per_minute < 0 {
        anyhow::bail!("--price-cents-per-minute must not be negative");
    }
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", args.listen))
        .trim_end_matches('/')
        .to_string();
    if !(public_url.starts_with("http://") || public_url.starts_with("https://")) {
        anyhow::bail!("--public-url must start with http:// or https://: {public_url:?}");
    }
    // One clear line, and nothing created, when the recognizer is not installed.
    let recognizer = recognizer(&args.recognizer, args.workers)?;
    let metrics = metrics_listener(args.metrics_listen)?;
    let data_dir = args.backend.data_dir.clone();
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let store = args.backend.open_store()?;
    let media = args.backend.open_media()?;
    let secret = signing_secret(&data_dir)?;
    first_run_hint(store.as_ref(), &data_dir, &public_url, args.log_format);
    let pipeline = pipeline(
        &store,
        &media,
        &args.backend,
        recognizer,
        args.recognizer.lease_ms,
        args.workers,
    )?;
    let workers = pipeline.start(args.workers);
    let health = Arc::new(Health::new(
        store.clone(),
        media.clone(),
        pipeline.recognizer.as_ref().map(|r| r.name().to_string()),
    ));
    let app = Arc::new(App {
        config: Config {
            data_dir: data_dir.clone(),
            public_url,
            price_cents_per_minute: args.price_cents_per_minute,
            trust_request_id: args.trust_request_id,
        },
        queue: store.wake(),
        limiter: Box::new(StoreLimiter::new(store.clone(), args.rate_limit_per_minute)),
        store,
        secret,
        uploads: Default::default(),
        media,
        health,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        tracing::info!(
            addr = %listener.local_addr()?,
            public_url = %app.config.public_url,
            workers = args.workers,
            "cuecraft serving"
        );
        if let Some(metrics) = metrics {
            serve_metrics(metrics, app.store.clone())?;
        }
        crate::http::server::run(listener, app, shutdown_signal()).await;
        anyhow::Ok(())
    })?;
    stop_workers(&pipeline, workers);
    Ok(())
}

/// Runs workers (no HTTP) until SIGTERM or ctrl-c.
pub fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    crate::ops::log::init(args.log_format);
    let n = args.workers as usize;
    let recognizer = recognizer(&args.recognizer, n)?;
    let metrics = metrics_listener(args.metrics_listen)?;
    let store = args.backend.open_store()?;
    let media = args.backend.open_media()?;
    let pipeline = pipeline(
        &store,
        &media,
        &args.backend,
        recognizer,
        args.recognizer.lease_ms,
        n,
    )?;
    // Bound before any work is claimed, so that a taken address stops the process at once.
    let listener = match args.listen {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .with_context(|| format!("listening on {addr}"))?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    let workers = pipeline.start(n);
    let health = Arc::new(Health::new(
        store.clone(),
        media.clone(),
        pipeline.recognizer.as_ref().map(|r| r.name().to_string()),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        if let Some(metrics) = metrics {
            serve_metrics(metrics, store.clone())?;
        }
        match listener {
            Some(listener) => {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                tracing::info!(workers = n, addr = %listener.local_addr()?, "cuecraft worker running");
                crate::http::health::serve(listener, health, shutdown_signal()).await;
            }
            None => {
                tracing::info!(workers = n, "cuecraft worker running");
                shutdown_signal().await;
            }
        }
        anyhow::Ok(())
    })?;
    stop_workers(&pipeline, workers);
    Ok(())
}

/// Binds `--metrics-listen` (so a taken address stops the process before it claims work) and
/// starts recording metrics, before any worker or request can record one.
fn metrics_listener(addr: Option<SocketAddr>) -> anyhow::Result<Option<std::net::TcpListener>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let l = std::net::TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?;
    l.set_nonblocking(true)?;
    crate::ops::metrics::install();
    Ok(Some(l))
}

/// Serves `GET /metrics` on `listener` for as long as the runtime runs.
fn serve_metrics(listener: std::net::TcpListener, store: Arc<dyn Store>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    tracing::info!(addr = %listener.local_addr()?, "metrics on /metrics");
    tokio::spawn(crate::http::metrics::serve(
        listener,
        store,
        std::future::pending::<()>(),
    ));
    Ok(())
}

/// Runs one admin command, printing one JSON object.
pub fn admin(args: AdminArgs) -> anyhow::Result<()> {
    let out = crate::admin::run(args)?;
    println!("{out}");
    Ok(())
}
