//! The response body of every handler: bytes in memory ([`Body::full`]), or a large object
//! streamed a piece at a time from a blocking reader ([`Body::stream`]: the editor's media
//! proxy), so that memory stays bounded by a few pieces whatever the object's size.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Frame, SizeHint};
use tokio::sync::mpsc;

/// Pieces read ahead of the client: at most this many wait in memory (plus the one being read).
const AHEAD: usize = 2;

/// A response body; see the module.
#[derive(Debug)]
pub struct Body(Kind);

#[derive(Debug)]
enum Kind {
    Full(Full<Bytes>),
    Stream {
        pieces: mpsc::Receiver<io::Result<Bytes>>,
        /// Bytes not yet handed to hyper: the exact size hint, so `Content-Length` is known.
        left: u64,
    },
}

impl Body {
    /// A body of these bytes.
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body(Kind::Full(Full::new(bytes.into())))
    }

    /// An empty body.
    pub fn empty() -> Body {
        Body::full(Bytes::new())
    }

    /// A body of `len` bytes read on a blocking thread in pieces of at most `piece` bytes:
    /// `read(at, n)` returns the `n` bytes from offset `at` (counted from the body's start).
    /// Reading stops when the client goes away; a read error (or a short read) ends the body
    /// with an error, so hyper closes the connection rather than send a short response as whole.
    /// Call from within the tokio runtime.
    pub fn stream<R>(len: u64, piece: u64, mut read: R) -> Body
    where
        R: FnMut(u64, u64) -> io::Result<Vec<u8>> + Send + 'static,
    {
        let (tx, pieces) = mpsc::channel(AHEAD);
        let piece = piece.max(1);
        tokio::task::spawn_blocking(move || {
            let mut at = 0;
            while at < len {
                let n = piece.min(len - at);
                let got = read(at, n).and_then(|bytes| {
                    if bytes.len() as u64 == n {
                        Ok(Bytes::from(bytes))
                    } else {
                        Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the object ended early",
                        ))
                    }
                });
                let failed = got.is_err();
                // An error here: the receiver is gone (the client left).
                if tx.blocking_send(got).is_err() || failed {
                    return;
                }
                at += n;
            }
        });
        Body(Kind::Stream { pieces, left: len })
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.get_mut().0 {
            Kind::Full(full) => Pin::new(full)
                .poll_frame(cx)
                .map_err(|never| match never {}),
            Kind::Stream { pieces, left } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                match pieces.poll_recv(cx) {
                    Poll::Ready(Some(Ok(bytes))) => {
                        *left = left.saturating_sub(bytes.len() as u64);
                        Poll::Ready(Some(Ok(Frame::data(bytes))))
                    }
                    Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
                    // The reader ended without its bytes (it panicked).
                    Poll::Ready(None) => Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the object ended early",
                    )))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Full(full) => full.is_end_stream(),
            Kind::Stream { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Full(full) => full.size_hint(),
            Kind::Stream { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn a_streamed_body_has_every_byte_in_order_and_its_exact_length() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let source = data.clone();
        let len = data.len() as u64;
        let got = runtime().block_on(async move {
            let body = Body::stream(len, 333, move |at, n| {
                Ok(source[at as usize..(at + n) as usize].to_vec())
            });
            assert_eq!(hyper::body::Body::size_hint(&body).exact(), Some(10_000));
            body.collect().await.unwrap().to_bytes()
        });
        assert_eq!(&got[..], &data[..]);
    }

    #[test]
    fn a_failed_or_short_read_ends_the_body_with_an_error() {
        let rt = runtime();
        let failing = rt.block_on(async {
            Body::stream(100, 10, |at, n| {
                if at >= 50 {
                    Err(io::Error::other("gone"))
                } else {
                    Ok(vec![0; n as usize])
                }
            })
            .collect()
            .await
        });
        assert!(failing.is_err());
        let short =
            rt.block_on(async { Body::stream(100, 40, |_, _| Ok(vec![0; 5])).collect().await });
        assert!(short.is_err());
    }

    #[test]
    fn reading_stops_soon_after_the_client_leaves() {
        let reads = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = reads.clone();
        let rt = runtime();
        rt.block_on(async move {
            let mut body = Body::stream(1 << 30, 1, move |_, n| {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(vec![0; n as usize])
            });
            let first = body.frame().await.unwrap().unwrap();
            assert_eq!(first.into_data().unwrap().len(), 1);
            drop(body);
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        });
        // One taken, a few read ahead and waiting: then the reader saw the receiver gone.
        let n = reads.load(std::sync::atomic::Ordering::SeqCst);
        assert!(n <= 2 + AHEAD as u64 + 1, "{n} pieces read");
    }
}
