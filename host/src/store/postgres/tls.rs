//! TLS of Postgres connections: libpq's `sslmode` and `sslrootcert` read from the store's URL,
//! and a rustls connector for the `postgres` crate that every connection of the store goes
//! through (the pools, the queue's listener, the migrations, so `serve`, `worker` and `admin`).
//!
//! The `postgres` crate's own URL parser knows `sslmode` disable, prefer and require only, and no
//! `sslrootcert`; both are taken out of the URL here, and the crate is told only whether TLS is
//! off, tried or required. What is checked of the server's certificate is the connector's
//! business (`crate::tls`):
//!
//! | sslmode | TLS | server certificate |
//! | --- | --- | --- |
//! | `disable` | never | - |
//! | `prefer` (no sslmode) | when the server offers it | not checked, or the chain when `sslrootcert` is given |
//! | `require` | always | not checked, or the chain when `sslrootcert` is given |
//! | `verify-ca` | always | the chain, to `sslrootcert` or the system's roots |
//! | `verify-full` | always | the chain and the host name, to `sslrootcert` or the system's roots |
//!
//! as libpq does, with two differences: without `sslrootcert`, `verify-*` trusts the system's
//! roots (libpq reads `~/.postgresql/root.crt`, nothing ambient is read here), and `prefer` does
//! not retry without TLS after a failed handshake. `sslrootcert=system` is the system's roots
//! and, as in libpq 16, means `verify-full`. A Unix socket never carries TLS (the server offers
//! none on it), whatever the sslmode. Client certificates (`sslcert`, `sslkey`) are not supported:
//! the `postgres` crate refuses them as unknown options. Channel binding (SCRAM-SHA-256-PLUS) is
//! not offered: the server's password check is SCRAM without it, as libpq's default `prefer`
//! falls back to.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::config::{Host, SslMode};
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::Socket;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::tls::{Check, Roots};

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it (the default).
    Prefer,
    /// TLS or no connection.
    Require,
    /// TLS with the server's certificate chain checked.
    VerifyCa,
    /// TLS with the chain and the host name checked.
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Mode, String> {
        Ok(match value {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not supported (disable, prefer, require, verify-ca or \
                     verify-full)"
                ))
            }
        })
    }
}

/// The TLS settings of a URL: the sslmode and what is checked of the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The sslmode (`prefer` when the URL names none).
    pub mode: Mode,
    /// What the connector checks.
    pub check: Check,
}

/// Splits a `postgres://` URL into the `postgres` crate's configuration and the TLS settings it
/// does not know. Errors name the parameter, never the URL (it may hold a password).
pub fn parse_url(url: &str) -> Result<(postgres::Config, Settings), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut sslmode, mut rootcert) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8()
                .map(|v| v.into_owned())
                .map_err(|_| format!("{key}: not UTF-8 once percent-decoded"))
        };
        match decode(key)?.as_str() {
            "sslmode" => sslmode = Some(decode(value)?),
            "sslrootcert" => rootcert = Some(decode(value)?),
            _ => kept.push(pair),
        }
    }
    let rebuilt = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config = postgres::Config::from_str(&rebuilt).map_err(|e| e.to_string())?;

    let roots = match rootcert.as_deref() {
        None => None,
        Some("") => return Err("sslrootcert is empty (a CA file, or system)".into()),
        Some("system") => Some(Roots::System),
        Some(path) => Some(Roots::File(path.into())),
    };
    let mode = match sslmode.as_deref() {
        Some(value) => Mode::parse(value)?,
        None if roots == Some(Roots::System) => Mode::VerifyFull,
        None => Mode::Prefer,
    };
    if roots == Some(Roots::System) && mode != Mode::VerifyFull {
        return Err(format!(
            "sslrootcert=system needs sslmode=verify-full, not {}",
            sslmode.unwrap_or_default()
        ));
    }
    let check = match (mode, roots) {
        (Mode::Disable, _) | (Mode::Prefer | Mode::Require, None) => Check::Nothing,
        (Mode::Prefer | Mode::Require, Some(roots)) => Check::Chain(roots),
        (Mode::VerifyCa, roots) => Check::Chain(roots.unwrap_or(Roots::System)),
        (Mode::VerifyFull, roots) => Check::ChainAndName(roots.unwrap_or(Roots::System)),
    };
    let only_sockets = config.get_hostaddrs().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, Host::Unix(_)));
    config.ssl_mode(match mode {
        Mode::Disable => SslMode::Disable,
        // PostgreSQL offers no TLS on a Unix socket; libpq does not ask there either.
        _ if only_sockets => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    });
    Ok((config, Settings { mode, check }))
}

/// The connector of every connection of a store: makes one TLS session per connection from one
/// client configuration (its roots read once, when the store opens).
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
}

impl Connector {
    /// A connector checking what `settings` says; fails when its CA file cannot be read.
    pub fn new(settings: &Settings) -> Result<Connector, String> {
        // PostgreSQL 17's direct TLS negotiation (`sslnegotiation=direct`) requires this ALPN
        // name; older servers ignore it.
        let config = crate::tls::client_config(&settings.check, &[b"postgresql"])?;
        Ok(Connector { config })
    }
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = Stream;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, io::Error> {
        // Called for a Unix socket too (with ""), where no TLS follows: a bad name is an error
        // only once a handshake needs it.
        Ok(Connect {
            config: self.config.clone(),
            name: ServerName::try_from(domain.to_string()).map_err(|_| domain.to_string()),
        })
    }
}

/// One connection's TLS handshake.
pub struct Connect {
    config: Arc<ClientConfig>,
    name: Result<ServerName<'static>, String>,
}

type Handshake = Pin<Box<dyn Future<Output = Result<Stream, io::Error>> + Send>>;

impl TlsConnect<Socket> for Connect {
    type Stream = Stream;
    type Error = io::Error;
    type Future = Handshake;

    fn connect(self, socket: Socket) -> Handshake {
        Box::pin(async move {
            let name = self.name.map_err(|host| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{host:?} is not a host name TLS can check"),
                )
            })?;
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, socket)
                .await?;
            Ok(Stream(Box::new(stream)))
        })
    }
}

/// A TLS connection to the server.
pub struct Stream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl TlsStream for Stream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> Result<Settings, String> {
        parse_url(url).map(|(_, s)| s)
    }

    #[test]
    fn sslmode_and_sslrootcert_mean_what_they_mean_to_libpq() {
        let base = "postgres://u:secret@db.example:5432/cuecraft";
        let file = || Roots::File("/etc/ca.pem".into());
        for (query, mode, check) in [
            ("", Mode::Prefer, Check::Nothing),
            ("?sslmode=disable", Mode::Disable, Check::Nothing),
            ("?sslmode=prefer", Mode::Prefer, Check::Nothing),
            ("?sslmode=require", Mode::Require, Check::Nothing),
            (
                "?sslmode=require&sslrootcert=/etc/ca.pem",
                Mode::Require,
                Check::Chain(file()),
            ),
            (
                "?sslmode=verify-ca",
                Mode::VerifyCa,
                Check::Chain(Roots::System),
            ),
            (
                "?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
                Mode::VerifyFull,
                Check::ChainAndName(file()),
            ),
            (
                "?sslmode=verify-full",
                Mode::VerifyFull,
                Check::ChainAndName(Roots::System),
            ),
            (
                "?sslrootcert=system",
                Mode::VerifyFull,
                Check::ChainAndName(Roots::System),
            ),
        ] {
            assert_eq!(
                settings(&format!("{base}{query}")),
                Ok(Settings { mode, check }),
                "{query}"
            );
        }
    }

    #[test]
    fn the_postgres_crate_gets_the_rest_of_the_url_and_whether_tls_is_needed() {
        let (config, _) = parse_url(
            "postgres://u:p@h:6543/db?application_name=x&sslmode=verify-full&connect_timeout=3",
        )
        .expect("parse");
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        assert_eq!(config.get_application_name(), Some("x"));
        assert_eq!(config.get_ports(), [6543]);
        assert_eq!(
            config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(3))
        );
        let (config, _) = parse_url("postgres://h/db").expect("parse");
        assert_eq!(config.get_ssl_mode(), SslMode::Prefer);
        // A Unix socket never carries TLS, whatever was asked.
        let (config, _) =
            parse_url("postgres://u@%2Frun%2Fpostgresql/db?sslmode=require").expect("parse");
        assert_eq!(config.get_ssl_mode(), SslMode::Disable);
    }

    #[test]
    fn unknown_or_contradictory_settings_are_refused_without_echoing_the_url() {
        for (query, says) in [
            ("sslmode=allow", "sslmode=allow is not supported"),
            (
                "sslmode=verify_full",
                "sslmode=verify_full is not supported",
            ),
            (
                "sslmode=require&sslrootcert=system",
                "needs sslmode=verify-full",
            ),
            ("sslrootcert=", "sslrootcert is empty"),
            ("sslcert=/c.pem", "sslcert"),
        ] {
            let err = settings(&format!("postgres://u:hunter2@h/db?{query}")).unwrap_err();
            assert!(err.contains(says), "{query}: {err}");
            assert!(!err.contains("hunter2"), "{query}: {err}");
        }
    }
}
