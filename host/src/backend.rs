//! Which store and media a process uses (`--data-dir`, `--store`, `--media`, or
//! `CUECRAFT_STORE`/`CUECRAFT_MEDIA`): the options `serve`, `worker` and `admin` share.

use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Where media live: file://DIR (default: DATA_DIR/media).
    #[arg(long, global = true, env = "CUECRAFT_MEDIA")]
    pub media: Option<String>,
}

impl BackendArgs {
    /// Opens the store (migrations applied) and checks the media location.
    pub fn open_store(&self) -> anyhow::Result<Arc<dyn Store>> {
        check_media(self.media.as_deref(), &self.data_dir)?;
        crate::store::open(self.store.as_deref(), &self.data_dir)
    }
}

/// Accepts the media locations this build serves: the data directory's `media` (also named as
/// `file://DATA_DIR/media`).
fn check_media(url: Option<&str>, data_dir: &Path) -> anyhow::Result<()> {
    let Some(url) = url else { return Ok(()) };
    let Some(path) = url.strip_prefix("file://") else {
        anyhow::bail!("--media {url}: not a media location this build serves (file://DIR)");
    };
    let wanted = data_dir.join("media");
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if !same(Path::new(path), &wanted) {
        anyhow::bail!(
            "--media {url}: this build keeps media in the data directory ({})",
            wanted.display()
        );
    }
    Ok(())
}
