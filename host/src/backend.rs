//! Which store and media a process uses (`--data-dir`, `--store`, `--media`, or
//! `CUECRAFT_STORE`/`CUECRAFT_MEDIA`): the options `serve`, `worker` and `admin` share.

use std::path::PathBuf;
use std::sync::Arc;

use crate::media::MediaStore;
use crate::store::Store;

/// Where the records and the media live: shared by `serve`, `worker` and `admin`.
#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// Directory of the databases, the media and the signing secret (created when missing): the
    /// short form of `--store sqlite://DIR --media file://DIR/media`.
    #[arg(long, global = true, default_value = "data")]
    pub data_dir: PathBuf,
    /// Where records live: sqlite://DIR (default: the data directory) or postgres://URL.
    #[arg(long, global = true, env = "CUECRAFT_STORE")]
    pub store: Option<String>,
    /// Where media live: file://DIR (default: DATA_DIR/media) or, in a build with the `s3`
    /// feature, s3://BUCKET[/PREFIX]?endpoint=URL&region=NAME with credentials from
    /// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN, AWS_REGION).
    #[arg(long, global = true, env = "CUECRAFT_MEDIA")]
    pub media: Option<String>,
    /// How often, in seconds, each process removes what ended processes left: partial uploads
    /// and the work directories of processes killed mid-job (a live process's are locked by it).
    #[arg(long, global = true, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub sweep_seconds: u64,
}

impl BackendArgs {
    /// Opens the store (migrations applied).
    pub fn open_store(&self) -> anyhow::Result<Arc<dyn Store>> {
        crate::store::open(self.store.as_deref(), &self.data_dir)
    }

    /// Opens the media store ([`crate::media::open`]): the directory, or the bucket (nothing is
    /// contacted yet).
    pub fn open_media(&self) -> anyhow::Result<Arc<dyn MediaStore>> {
        let media = crate::media::open(self.media.as_deref(), &self.data_dir)
            .map_err(anyhow::Error::msg)?;
        tracing::info!(media = %media.describe(), "media store");
        Ok(media)
    }
}
