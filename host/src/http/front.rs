//! The request-head check in front of hyper's parser, so that a request the server cannot read
//! is answered like every other error — `{error, code}` JSON with `Cache-Control: no-store` —
//! instead of hyper's bare 400/414/431, which hyper 1 writes itself with no hook to shape it.
//!
//! [`Front`] wraps the connection. Each request head is held back until it is complete and read
//! with the parser hyper uses (httparse, the same 100-field limit) plus the checks hyper makes
//! after it (request target, `Content-Length`, `Transfer-Encoding`), and one hyper does not make:
//! an HTTP/1.1 request must carry exactly one `Host` (RFC 9112 3.2). A good head then goes to
//! hyper unchanged, followed by its body, whose end is tracked (`Content-Length` or chunked) to
//! find the next head on a kept-alive connection. A bad one never reaches hyper: hyper sees the
//! connection end, finishes the responses it owes, and when it closes the connection the error
//! answer is written and the connection closed (`Connection: close`).
//!
//! Limits: a head of 64 KiB (431 `headers_too_large`, or 414 `uri_too_long` when the request
//! line alone does not fit), at most 100 header fields (431), a target of 65534 bytes (414).
//! A chunked body this layer cannot follow is passed through untouched for the rest of the
//! connection: hyper then fails the body, and the handler answers.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::http::error::ApiError;

/// Largest request head read, bytes.
pub const MAX_HEAD: usize = 64 * 1024;

/// Most header fields in a head (hyper's default).
const MAX_HEADERS: usize = 100;

/// Longest request target (hyper's limit).
const MAX_TARGET: usize = 65_534;

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 16 * 1024;

/// Where the byte stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Receiving a request head.
    Head,
    /// Inside a body with this many bytes left.
    Length(u64),
    /// Inside a chunked body.
    Chunked(Chunk),
    /// Passing everything through, unchecked.
    Opaque,
    /// A head was refused: nothing more is read.
    Refused,
}

/// Position in a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a chunk-size line: its value so far, and whether a digit was seen.
    Size(u64, bool),
    /// After the size: extensions up to the end of the line.
    Extension(u64),
    /// Chunk data, this many bytes left.
    Data(u64),
    /// The CR LF after chunk data (`true` once CR was seen).
    DataEnd(bool),
    /// After the last chunk: trailer lines; `true` while the current line is empty so far.
    Trailer(bool),
}

/// What one step of the chunk reader made of a byte.
enum Step {
    Next(Chunk),
    Done,
    Lost,
}

impl Chunk {
    fn step(self, b: u8) -> Step {
        match self {
            Chunk::Size(v, seen) => match (b as char).to_digit(16) {
                Some(d) => match v.checked_mul(16).and_then(|v| v.checked_add(d as u64)) {
                    Some(v) => Step::Next(Chunk::Size(v, true)),
                    None => Step::Lost,
                },
                None if !seen => Step::Lost,
                None if b == b'\n' => Step::Next(Self::after_size(v)),
                None => Step::Next(Chunk::Extension(v)),
            },
            Chunk::Extension(v) if b == b'\n' => Step::Next(Self::after_size(v)),
            Chunk::Extension(v) => Step::Next(Chunk::Extension(v)),
            Chunk::Data(_) => Step::Lost, // consumed in bulk by `advance`
            Chunk::DataEnd(false) if b == b'\r' => Step::Next(Chunk::DataEnd(true)),
            Chunk::DataEnd(_) if b == b'\n' => Step::Next(Chunk::Size(0, false)),
            Chunk::DataEnd(_) => Step::Lost,
            Chunk::Trailer(empty) => match b {
                b'\n' if empty => Step::Done,
                b'\n' => Step::Next(Chunk::Trailer(true)),
                b'\r' => Step::Next(Chunk::Trailer(empty)),
                _ => Step::Next(Chunk::Trailer(false)),
            },
        }
    }

    fn after_size(v: u64) -> Chunk {
        if v == 0 {
            Chunk::Trailer(true)
        } else {
            Chunk::Data(v)
        }
    }
}

/// A connection with its request heads checked before hyper reads them.
pub struct Front<S> {
    inner: S,
    state: State,
    /// A head being received.
    head: Vec<u8>,
    /// Checked bytes hyper has not read yet, from `pass_at`.
    pass: Vec<u8>,
    pass_at: usize,
    /// The error answer for a refused head and how much of it is written.
    answer: Option<(Vec<u8>, usize)>,
}

impl<S> Front<S> {
    /// Wraps a fresh connection.
    pub fn new(inner: S) -> Front<S> {
        Front {
            inner,
            state: State::Head,
            head: Vec::new(),
            pass: Vec::new(),
            pass_at: 0,
            answer: None,
        }
    }

    /// Runs the received `input` through the checks: what may go to hyper is appended to `pass`.
    fn feed(&mut self, input: &[u8]) {
        // What follows a complete head in the same read is read again from `rest`.
        let mut rest: Vec<u8> = Vec::new();
        let mut in_rest = false;
        let mut at = 0;
        loop {
            let data: &[u8] = if in_rest { &rest[at..] } else { &input[at..] };
            if data.is_empty() {
                return;
            }
            match self.state {
                State::Refused => return,
                State::Opaque => {
                    self.pass.extend_from_slice(data);
                    return;
                }
                State::Length(left) => {
                    let n = left.min(data.len() as u64) as usize;
                    self.pass.extend_from_slice(&data[..n]);
                    at += n;
                    self.state = if left == n as u64 {
                        State::Head
                    } else {
                        State::Length(left - n as u64)
                    };
                }
                State::Chunked(chunk) => {
                    let (used, next) = advance(chunk, data);
                    self.pass.extend_from_slice(&data[..used]);
                    at += used;
                    self.state = next;
                }
                State::Head => {
                    // A head ends at a line feed: without a new one there is nothing to parse.
                    let new_line = data.contains(&b'\n');
                    self.head.extend_from_slice(data);
                    let checked = if new_line {
                        check_head(&self.head)
                    } else {
                        Ok(None)
                    };
                    match checked {
                        Ok(None) if self.head.len() > MAX_HEAD => {
                            let line = self.head.iter().position(|&b| b == b'\n');
                            self.refuse(if line.unwrap_or(self.head.len()) > MAX_TARGET {
                                ApiError::UriTooLong
                            } else {
                                ApiError::HeadersTooLarge
                            });
                            return;
                        }
                        Ok(None) => return,
                        Ok(Some((len, next))) => {
                            self.pass.extend_from_slice(&self.head[..len]);
                            rest = self.head.split_off(len);
                            self.head.clear();
                            self.state = next;
                            in_rest = true;
                            at = 0;
                        }
                        Err(e) => {
                            self.refuse(e);
                            return;
                        }
                    }
                }
            }
        }
    }

    fn refuse(&mut self, e: ApiError) {
        tracing::debug!(code = e.code(), "refused a request head");
        self.state = State::Refused;
        self.head = Vec::new();
        self.answer = Some((answer(&e), 0));
    }
}

/// Follows a chunked body through `data`: the bytes that belong to it and the state after them.
fn advance(mut chunk: Chunk, data: &[u8]) -> (usize, State) {
    let mut i = 0;
    while i < data.len() {
        if let Chunk::Data(left) = chunk {
            let n = left.min((data.len() - i) as u64) as usize;
            i += n;
            chunk = if left == n as u64 {
                Chunk::DataEnd(false)
            } else {
                Chunk::Data(left - n as u64)
            };
            continue;
        }
        let b = data[i];
        i += 1;
        match chunk.step(b) {
            Step::Next(c) => chunk = c,
            Step::Done => return (i, State::Head),
            // Hyper will refuse this body; from here on, everything goes to it unchecked.
            Step::Lost => return (data.len(), State::Opaque),
        }
    }
    (i, State::Chunked(chunk))
}

/// Reads a request head: `None` while incomplete; its length and the body's framing when good.
fn check_head(head: &[u8]) -> Result<Option<(usize, State)>, ApiError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(head) {
        Ok(httparse::Status::Partial) => return Ok(None),
        Ok(httparse::Status::Complete(len)) => len,
        Err(httparse::Error::TooManyHeaders) => return Err(ApiError::HeadersTooLarge),
        Err(e) => return Err(ApiError::MalformedRequest(e.to_string())),
    };
    let target = req.path.unwrap_or_default();
    if target.len() > MAX_TARGET {
        return Err(ApiError::UriTooLong);
    }
    if len > MAX_HEAD {
        return Err(ApiError::HeadersTooLarge);
    }
    if hyper::Uri::try_from(target).is_err() {
        return Err(ApiError::MalformedRequest("invalid request target".into()));
    }
    let http11 = req.version == Some(1);
    let fields: &[httparse::Header<'_>] = req.headers;
    let named = |name: &'static str| {
        fields
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    };
    match named("host").count() {
        0 if http11 => {
            return Err(ApiError::MalformedRequest(
                "an HTTP/1.1 request needs a Host header".into(),
            ))
        }
        0 | 1 => {}
        _ => {
            return Err(ApiError::MalformedRequest(
                "more than one Host header".into(),
            ))
        }
    }
    if let Some(te) = named("transfer-encoding").next_back() {
        if !http11 {
            return Err(ApiError::MalformedRequest(
                "Transfer-Encoding in an HTTP/1.0 request".into(),
            ));
        }
        let last = te.value.rsplit(|&b| b == b',').next().unwrap_or_default();
        if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Err(ApiError::MalformedRequest(
                "Transfer-Encoding must end in chunked".into(),
            ));
        }
        return Ok(Some((len, State::Chunked(Chunk::Size(0, false)))));
    }
    let mut length: Option<u64> = None;
    for h in named("content-length") {
        for part in h.value.split(|&b| b == b',') {
            let part = part.trim_ascii();
            let n = (!part.is_empty() && part.iter().all(u8::is_ascii_digit))
                .then(|| std::str::from_utf8(part).ok()?.parse::<u64>().ok())
                .flatten();
            match (n, length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(seen)) if n == seen => {}
                _ => return Err(ApiError::MalformedRequest("invalid Content-Length".into())),
            }
        }
    }
    Ok(Some(match length {
        None | Some(0) => (len, State::Head),
        Some(n) => (len, State::Length(n)),
    }))
}

/// The whole HTTP response for a refused head: the JSON error, not cached, connection closed.
fn answer(e: &ApiError) -> Vec<u8> {
    let body = serde_json::to_vec(&e.body()).unwrap_or_default();
    let status = hyper::StatusCode::from_u16(e.status()).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json; charset=utf-8\r\n\
         cache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

impl<S: AsyncRead + Unpin> AsyncRead for Front<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pass_at < this.pass.len() {
                let n = buf.remaining().min(this.pass.len() - this.pass_at);
                buf.put_slice(&this.pass[this.pass_at..this.pass_at + n]);
                this.pass_at += n;
                if this.pass_at == this.pass.len() {
                    this.pass.clear();
                    this.pass_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.state == State::Refused {
                // The end of the connection, as hyper sees it.
                return Poll::Ready(Ok(()));
            }
            if let (State::Length(left), true) = (this.state, buf.remaining() > 0) {
                // Inside a body of known length (an upload): straight into hyper's buffer.
                let want = left.min(buf.remaining() as u64) as usize;
                let mut body = ReadBuf::new(buf.initialize_unfilled_to(want));
                std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut body))?;
                let n = body.filled().len();
                buf.advance(n);
                this.state = if n as u64 == left {
                    State::Head
                } else if n == 0 {
                    // The client closed inside the body: hyper sees the end as it is.
                    State::Opaque
                } else {
                    State::Length(left - n as u64)
                };
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; READ_CHUNK];
            let mut read = ReadBuf::new(&mut chunk);
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let got = read.filled();
            if got.is_empty() {
                // The client closed: hand over an incomplete head as it is, for hyper to end.
                let partial = std::mem::take(&mut this.head);
                if partial.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.pass.extend_from_slice(&partial);
                this.state = State::Opaque;
                continue;
            }
            let got = got.to_vec();
            this.feed(&got);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Front<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    /// hyper closes the connection once it has written every response it owed: the answer to a
    /// refused head goes out first.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while let Some((bytes, at)) = this.answer.as_mut() {
            if *at == bytes.len() {
                this.answer = None;
                break;
            }
            let n = std::task::ready!(Pin::new(&mut this.inner).poll_write(cx, &bytes[*at..]))?;
            if n == 0 {
                this.answer = None;
                break;
            }
            *at += n;
        }
        std::task::ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(chunks: &[&[u8]]) -> Front<()> {
        let mut f = Front::new(());
        for c in chunks {
            f.feed(c);
        }
        f
    }

    fn code(f: &Front<()>) -> Option<String> {
        let (bytes, _) = f.answer.as_ref()?;
        let text = String::from_utf8_lossy(bytes);
        let body = text.split("\r\n\r\n").nth(1)?;
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        Some(v["code"].as_str()?.to_string())
    }

    #[test]
    fn good_requests_pass_unchanged_across_reads_and_keep_alive() {
        let reqs: &[u8] = b"POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
GET /v1/x HTTP/1.1\r\nHost: a\r\n\r\n\
PUT /upload/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n\
GET /v1/y HTTP/1.0\r\n\r\n";
        for split in [1, 3, 7, 64, reqs.len()] {
            let chunks: Vec<&[u8]> = reqs.chunks(split).collect();
            let f = fed(&chunks);
            assert_eq!(f.pass, reqs, "split {split}");
            assert_eq!(f.state, State::Head);
            assert!(f.answer.is_none());
        }
    }

    #[test]
    fn a_bad_head_after_good_requests_is_held_back_and_answered() {
        let good: &[u8] = b"GET /v1/x HTTP/1.1\r\nHost: a\r\n\r\n";
        let mut input = good.to_vec();
        input.extend_from_slice(b"GET /v1/x HTTP/1.1\r\n\r\n");
        let f = fed(&[&input]);
        assert_eq!(f.pass, good);
        assert_eq!(f.state, State::Refused);
        assert_eq!(code(&f).as_deref(), Some("malformed_request"));
    }

    #[test]
    fn each_kind_of_bad_head_gets_its_code() {
        let cases: &[(&[u8], &str)] = &[
            (b"GARBAGE\r\n\r\n", "malformed_request"),
            (b"GET /x HTTP/9.9\r\nHost: a\r\n\r\n", "malformed_request"),
            (b"GET /x HTTP/1.1\r\n\r\n", "malformed_request"),
            (
                b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                "malformed_request",
            ),
            (
                b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n",
                "malformed_request",
            ),
            (
                b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "malformed_request",
            ),
            (
                b"GET /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
                "malformed_request",
            ),
            (
                b"GET /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                "malformed_request",
            ),
        ];
        for (head, want) in cases {
            let f = fed(&[head]);
            assert_eq!(
                code(&f).as_deref(),
                Some(*want),
                "{}",
                String::from_utf8_lossy(head)
            );
            assert!(f.pass.is_empty());
        }
        let mut many = b"GET /x HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 0..100 {
            many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(code(&fed(&[&many])).as_deref(), Some("headers_too_large"));
        let mut big = b"GET /x HTTP/1.1\r\nHost: a\r\nX-Big: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        assert_eq!(code(&fed(&[&big])).as_deref(), Some("headers_too_large"));
        let mut long = b"GET /".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert_eq!(code(&fed(&[&long])).as_deref(), Some("uri_too_long"));
    }

    #[test]
    fn a_chunked_body_it_cannot_follow_passes_through_unchecked() {
        let input: &[u8] = b"PUT /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nGARBAGE\r\n\r\n";
        let f = fed(&[input]);
        assert_eq!(f.pass, input);
        assert_eq!(f.state, State::Opaque);
        assert!(f.answer.is_none());
    }
}
