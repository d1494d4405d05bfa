//! A small blocking HTTP/1.1 client for `cuecraft submit`: `http://` and `https://`, one
//! connection per request (`Connection: close`), request bodies streamed from disk with a
//! progress callback.
//!
//! It exists so the client stays a plain sequential program (create, upload, poll, download) with
//! no async runtime, and so the upload body is read from the file in 64 KiB pieces rather than
//! held in memory. TLS is rustls (`crate::tls`: the `ring` provider, the host name and chain
//! checked against the system's roots or a CA file), never written here.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::tls::{Check, Roots};

/// Longest status line plus headers accepted from a server.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest response body accepted (subtitles of very long media stay far below this).
const MAX_BODY_BYTES: u64 = 512 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const IO_TIMEOUT: Duration = Duration::from_secs(300);

/// An `http://` or `https://host[:port]/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Whether it is `https://`.
    pub https: bool,
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port; 80 (http) or 443 (https) when the URL names none.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub target: String,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL.
    pub fn parse(text: &str) -> Result<Url, String> {
        let text = text.trim();
        let (https, rest) = if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(format!("{text}: expected an http:// or https:// URL"));
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let target = target.split('#').next().unwrap_or("/").to_string();
        if authority.contains('@') {
            return Err(format!("{text}: credentials in the URL are not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{text}: unclosed [ in the host"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(format!("{text}: bad port")),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(format!("{text}: no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{text}: bad port {p:?}"))?,
            None if https => 443,
            None => 80,
        };
        Ok(Url {
            https,
            host,
            port,
            target,
        })
    }

    /// This URL with `suffix` (`/jobs`, `/jobs/ID?format=srt`) appended to its path.
    pub fn join(&self, suffix: &str) -> Url {
        let base = self.target.split('?').next().unwrap_or("/");
        Url {
            https: self.https,
            host: self.host.clone(),
            port: self.port,
            target: format!("{}{}", base.trim_end_matches('/'), suffix),
        }
    }

    fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.https { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// How `https://` servers are checked: the chain and the host name, against the system's roots or
/// the certificates of a CA file. The rustls configuration (and so the roots) is read at the
/// first https request, so an http-only run never needs them.
pub struct Tls {
    roots: Roots,
    config: OnceLock<Result<Arc<ClientConfig>, String>>,
}

impl Tls {
    /// The system's roots, or `ca_file`'s certificates (a private CA) when given.
    pub fn new(ca_file: Option<PathBuf>) -> Tls {
        Tls {
            roots: ca_file.map_or(Roots::System, Roots::File),
            config: OnceLock::new(),
        }
    }

    fn config(&self) -> io::Result<Arc<ClientConfig>> {
        self.config
            .get_or_init(|| {
                crate::tls::client_config(&Check::ChainAndName(self.roots.clone()), &[b"http/1.1"])
            })
            .clone()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    }
}

/// A connection: plain TCP, or TLS over it.
trait Conn: Read + Write {}
impl<T: Read + Write> Conn for T {}

/// A response: status, headers (names lowercased) and the whole body.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Headers in arrival order, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The decoded body (chunked transfer undone).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a request sends after its headers.
pub enum Body<'a> {
    /// Nothing (`Content-Length` is not sent).
    Empty,
    /// A small body in memory, such as JSON.
    Bytes(&'a [u8]),
    /// A file read from disk in pieces; `progress` is told the bytes sent so far.
    File {
        /// The file to send.
        path: &'a Path,
        /// Bytes to send; the caller declared this length in a header.
        len: u64,
        /// Called after every piece with the running total.
        progress: &'a mut dyn FnMut(u64),
    },
}

/// Sends one request and reads the whole response. `headers` must not include `Host` or
/// `Connection`; `Content-Length` is added for `Body::Bytes` and must be given for `Body::File`.
pub fn request(
    tls: &Tls,
    method: &str,
    url: &Url,
    headers: &[(&str, &str)],
    body: Body<'_>,
) -> io::Result<Response> {
    let mut stream = connect(tls, url)?;

    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: cuecraft-submit/{}\r\n",
        url.target,
        url.host_header(),
        env!("CARGO_PKG_VERSION")
    );
    for (name, value) in headers {
        if name.contains(['\r', '\n', ':']) || value.contains(['\r', '\n']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("header {name:?} contains a line break"),
            ));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Body::Bytes(bytes) = &body {
        head.push_str(&format!("Content-Length: {}\r\n", bytes.len()));
    }
    head.push_str("\r\n");

    let mut writer = io::BufWriter::with_capacity(64 * 1024, &mut stream);
    let sent = (|| -> io::Result<()> {
        writer.write_all(head.as_bytes())?;
        match body {
            Body::Empty => {}
            Body::Bytes(bytes) => writer.write_all(bytes)?,
            Body::File {
                path,
                len,
                progress,
            } => send_file(&mut writer, path, len, progress)?,
        }
        writer.flush()
    })();
    // Whatever the buffer still holds is not sent after an error.
    drop(writer.into_parts());
    // A server may answer and close before the body is complete (a refused upload): its answer is
    // worth more than our broken pipe, so try to read it before reporting the write error.
    let mut reader = BufReader::new(stream);
    match (sent, read_response(&mut reader, method)) {
        (_, Ok(response)) => Ok(response),
        (Err(write_error), Err(_)) => Err(write_error),
        (Ok(()), Err(read_error)) => Err(read_error),
    }
}

/// A connection to `url`'s host: TCP, and for https a TLS session whose handshake (and so the
/// certificate check) is done here, so a refused certificate is reported as such.
fn connect(tls: &Tls, url: &Url) -> io::Result<Box<dyn Conn>> {
    let mut tcp = connect_tcp(url)?;
    tcp.set_read_timeout(Some(IO_TIMEOUT))?;
    tcp.set_write_timeout(Some(IO_TIMEOUT))?;
    if !url.https {
        return Ok(Box::new(tcp));
    }
    let name = ServerName::try_from(url.host.clone()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a host name TLS can check", url.host),
        )
    })?;
    let mut session = ClientConnection::new(tls.config()?, name)
        .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
    while session.is_handshaking() {
        if let Err(e) = session.complete_io(&mut tcp) {
            let refused = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .is_some_and(|r| matches!(r, rustls::Error::InvalidCertificate(_)));
            let hint = if refused {
                "; if the server's certificate is signed by a private CA, name its certificate with \
                 --ca-file FILE (or CUECRAFT_CA_FILE)"
            } else {
                ""
            };
            return Err(io::Error::new(
                e.kind(),
                format!("TLS with {}:{}: {e}{hint}", url.host, url.port),
            ));
        }
    }
    Ok(Box::new(StreamOwned::new(session, tcp)))
}

fn connect_tcp(url: &Url) -> io::Result<TcpStream> {
    let mut last = io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} resolves to no address", url.host),
    );
    for addr in (url.host.as_str(), url.port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn send_file(
    writer: &mut impl Write,
    path: &Path,
    len: u64,
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    let mut file = std::fs::File::open(path)?.take(len);
    let mut buf = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    progress(0);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        writer.write_all(&buf[..n])?;
        sent += n as u64;
        progress(sent);
    }
    if sent != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the file shrank while it was being sent ({sent} of {len} bytes)"),
        ));
    }
    Ok(())
}

fn bad(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Reads a response from `reader`: status line, headers, then the body by `Transfer-Encoding:
/// chunked`, `Content-Length` or the end of the connection.
pub fn read_response(reader: &mut impl BufRead, method: &str) -> io::Result<Response> {
    let mut head_bytes = 0usize;
    let mut next_line = |reader: &mut dyn BufRead| -> io::Result<String> {
        let mut line = Vec::new();
        reader
            .take((MAX_HEAD_BYTES - head_bytes.min(MAX_HEAD_BYTES)) as u64 + 1)
            .read_until(b'\n', &mut line)?;
        head_bytes += line.len();
        if head_bytes > MAX_HEAD_BYTES {
            return Err(bad("response headers are too long"));
        }
        if !line.ends_with(b"\n") {
            return Err(bad(
                "the connection closed in the middle of the response headers",
            ));
        }
        Ok(String::from_utf8_lossy(&line).trim_end().to_string())
    };
    let mut status_line = next_line(reader)?;
    // Skip any interim 1xx responses (100 Continue) a server sends unasked.
    let (status, headers) = loop {
        let status = parse_status_line(&status_line)?;
        let mut headers = Vec::new();
        loop {
            let line = next_line(reader)?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| bad(format!("malformed header line {line:?}")))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        if (100..200).contains(&status) {
            status_line = next_line(reader)?;
            continue;
        }
        break (status, headers);
    };
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if method == "HEAD" || status == 204 || status == 304 {
        return Ok(response);
    }
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    if chunked {
        response.body = read_chunked(reader)?;
    } else if let Some(len) = response.header("content-length") {
        let len: u64 = len
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad Content-Length {len:?}")))?;
        if len > MAX_BODY_BYTES {
            return Err(bad(format!("response body of {len} bytes is too large")));
        }
        let mut body = Vec::with_capacity(len.min(1 << 20) as usize);
        reader.take(len).read_to_end(&mut body)?;
        if (body.len() as u64) < len {
            return Err(bad("the connection closed before the whole body arrived"));
        }
        response.body = body;
    } else {
        reader
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut response.body)?;
        if response.body.len() as u64 > MAX_BODY_BYTES {
            return Err(bad("response body is too large"));
        }
    }
    Ok(response)
}

fn parse_status_line(line: &str) -> io::Result<u16> {
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(bad(format!("not an HTTP/1.x response: {line:?}")));
    }
    parts
        .next()
        .and_then(|code| code.parse::<u16>().ok())
        .filter(|code| (100..1000).contains(code))
        .ok_or_else(|| bad(format!("malformed status line {line:?}")))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = Vec::new();
        reader.take(1024).read_until(b'\n', &mut size_line)?;
        if !size_line.ends_with(b"\n") {
            return Err(bad("the connection closed inside a chunk header"));
        }
        let text = String::from_utf8_lossy(&size_line);
        let hex = text.split(';').next().unwrap_or_default().trim();
        let size =
            u64::from_str_radix(hex, 16).map_err(|_| bad(format!("bad chunk size {hex:?}")))?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            loop {
                let mut line = Vec::new();
                reader.take(8 * 1024).read_until(b'\n', &mut line)?;
                if line.is_empty() || line == b"\r\n" || line == b"\n" {
                    return Ok(body);
                }
            }
        }
        if body.len() as u64 + size > MAX_BODY_BYTES {
            return Err(bad("response body is too large"));
        }
        let before = body.len();
        reader.take(size).read_to_end(&mut body)?;
        if ((body.len() - before) as u64) < size {
            return Err(bad("the connection closed inside a chunk"));
        }
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf)?;
        if &crlf != b"\r\n" {
            return Err(bad("a chunk does not end with CRLF"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn urls_split_into_host_port_and_target() {
        assert_eq!(
            url("http://127.0.0.1:8080/v1"),
            Url {
                https: false,
                host: "127.0.0.1".into(),
                port: 8080,
                target: "/v1".into()
            }
        );
        assert_eq!(url("http://example.com").target, "/");
        assert_eq!(url("http://example.com").port, 80);
        assert_eq!(url("http://example.com?x=1").target, "/?x=1");
        assert_eq!(url("http://[::1]:9/up#frag").host, "::1");
        assert_eq!(url("http://[::1]:9/up#frag").target, "/up");
        assert_eq!(url("http://[::1]:9/").host_header(), "[::1]:9");
        assert_eq!(
            url("http://h:1/v1/").join("/jobs/abc?format=srt").target,
            "/v1/jobs/abc?format=srt"
        );
        let secure = url("https://example.com/v1");
        assert_eq!((secure.https, secure.port), (true, 443));
        assert_eq!(secure.host_header(), "example.com");
        assert!(secure.join("/jobs").https);
        assert_eq!(url("https://h:8443/").host_header(), "h:8443");
        assert_eq!(url("http://h:443/").host_header(), "h:443");
        for refused in [
            "ftp://h",
            "http://",
            "http://h:0/",
            "http://h:x/",
            "http://u:p@h/",
        ] {
            assert!(Url::parse(refused).is_err(), "{refused}");
        }
    }

    fn parse(raw: &[u8]) -> io::Result<Response> {
        read_response(&mut BufReader::new(raw), "GET")
    }

    #[test]
    fn bodies_are_read_by_length_chunks_or_close() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloEXTRA").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(r.header("x-a"), Some("b"));

        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n6;x=y\r\npedia \r\n0\r\nT: v\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"Wikipedia ");

        let r = parse(b"HTTP/1.0 404 Not Found\r\n\r\n{\"error\":\"x\"}").unwrap();
        assert_eq!(
            (r.status, r.body.as_slice()),
            (404, &b"{\"error\":\"x\"}"[..])
        );

        let r = parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.status, 201);
    }

    #[test]
    fn broken_responses_are_errors_not_panics() {
        for raw in [
            &b""[..],
            b"SSH-2.0\r\n\r\n",
            b"HTTP/1.1 abc\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Le",
        ] {
            assert!(parse(raw).is_err(), "{:?}", String::from_utf8_lossy(raw));
        }
        let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 10));
        assert!(parse(&huge).is_err());
    }
}
