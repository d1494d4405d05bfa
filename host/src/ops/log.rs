//! The log: text for a terminal, JSON lines for a log shipper; the request id of every request;
//! paths written without the secrets some of them carry.

use std::fmt;

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colours on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields.message`, the event's fields and
    /// `span` / `spans` with the request id or job of the work it belongs to.
    Json,
}

/// Installs the process's logger on stderr at `RUST_LOG`'s level (`info` by default). A second
/// call does nothing.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
}

/// The longest request id taken from a client's `X-Request-Id`.
const MAX_REQUEST_ID: usize = 128;

/// A request's id: the trusted `X-Request-Id` a proxy in front set (when it is 1-128 characters
/// of letters, digits and `-_.:@/+=`, so it cannot forge or break a log line), otherwise a new
/// random one (24 hex digits).
pub fn request_id(given: Option<&str>, trusted: bool) -> String {
    if let Some(given) = given.filter(|_| trusted) {
        let ok = (1..=MAX_REQUEST_ID).contains(&given.len())
            && given
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:@/+=".contains(&b));
        if ok {
            return given.to_string();
        }
    }
    crate::util::new_id().unwrap_or_else(|_| {
        // No random bytes: still unique enough within a process to follow one request.
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        format!("local-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    })
}

/// A request path as written in the log: a sign-in link's one-time token (`/login/<token>`) and
/// any other segment shaped like a secret token (64 hex digits) become `<token>`. Queries are
/// never logged (an upload URL's signature is there).
pub struct SafePath<'a>(pub &'a str);

impl fmt::Display for SafePath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.0.split(['?', '#']).next().unwrap_or("");
        let mut after_login = false;
        for (i, segment) in path.split('/').enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            if (after_login && !segment.is_empty()) || looks_secret(segment) {
                f.write_str("<token>")?;
            } else {
                f.write_str(segment)?;
            }
            after_login = i == 1 && segment == "login";
        }
        Ok(())
    }
}

/// A segment that may be a credential: 40 or more characters of a token alphabet (sign-in,
/// session and CSRF tokens, API keys). Ids (24 hex digits) and file names stay readable.
fn looks_secret(segment: &str) -> bool {
    segment.len() >= 40
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_well_formed_id_is_kept_and_anything_else_is_replaced() {
        assert_eq!(request_id(Some("lb-42:abc"), true), "lb-42:abc");
        let made = request_id(Some("lb-42:abc"), false);
        assert_ne!(made, "lb-42:abc");
        assert!(crate::util::is_id(&made), "{made}");
        for bad in ["", "a b", "line\nbreak", "quote\"", &"x".repeat(129)] {
            let id = request_id(Some(bad), true);
            assert!(crate::util::is_id(&id), "{bad:?} gave {id:?}");
        }
        assert_ne!(request_id(None, true), request_id(None, true));
    }

    #[test]
    fn sign_in_tokens_and_secret_shaped_segments_are_not_written() {
        let token = "ab".repeat(32);
        assert_eq!(
            SafePath(&format!("/login/{token}")).to_string(),
            "/login/<token>"
        );
        assert_eq!(SafePath("/login/short").to_string(), "/login/<token>");
        assert_eq!(SafePath("/login").to_string(), "/login");
        assert_eq!(
            SafePath(&format!("/x/cc_live_{}", "a".repeat(40))).to_string(),
            "/x/<token>"
        );
        let id = "0123456789abcdef01234567";
        assert_eq!(
            SafePath(&format!("/editor/{id}/media?sig=secret")).to_string(),
            format!("/editor/{id}/media")
        );
        assert_eq!(SafePath("/v1/jobs").to_string(), "/v1/jobs");
    }
}
