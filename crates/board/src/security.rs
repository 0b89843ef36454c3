//! The two checks every request passes before any handler runs: a localhost `Host` and the
//! run's token.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cairn_domain::ports::IdGen;

use crate::Shared;

/// The header a mutation carries the token in.
pub const TOKEN_HEADER: &str = "x-cairn-token";

/// A random per-run secret: 128 bits, as 32 hex digits.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    pub fn random(ids: &dyn IdGen) -> Self {
        Self(format!("{:032x}", ids.random_u128()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the first difference is.
    fn matches(&self, given: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// Whether a `Host` header names this machine's loopback: `localhost`, `127.0.0.1` or `[::1]`,
/// with or without a port. Anything else is a name some other party controls (DNS rebinding).
pub fn is_local_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inner, port)) if port.is_empty() || is_port(port) => return inner == "::1",
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1"
}

fn is_port(text: &str) -> bool {
    text.strip_prefix(':')
        .unwrap_or(text)
        .parse::<u16>()
        .is_ok_and(|_| !text.is_empty())
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

fn forbidden(why: &str) -> Response {
    (StatusCode::FORBIDDEN, format!("403 forbidden: {why}\n")).into_response()
}

pub async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    match host {
        Some(host) if is_local_host(host) => {}
        _ => {
            return forbidden(
                "the Host header must be localhost, 127.0.0.1 or [::1]; open the URL `cairn board` printed",
            );
        }
    }
    let header_token = request
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|h| h.to_str().ok());
    // A mutation must carry the token in a header: a page on another site can make a browser
    // send a query string, never a custom header.
    let given = if request.method() == Method::GET {
        header_token.or_else(|| query_token(request.uri().query()))
    } else {
        header_token
    };
    match given {
        Some(token) if shared.token.matches(token) => next.run(request).await,
        Some(_) => forbidden("wrong token; open the URL `cairn board` printed at start"),
        None => forbidden("no token; open the URL `cairn board` printed at start"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_are_local() {
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:43210",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(is_local_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "127.0.0.2",
            "[::2]:80",
            "localhost:notaport",
            "localhost:",
            "",
        ] {
            assert!(!is_local_host(bad), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        struct Fixed;
        impl IdGen for Fixed {
            fn random_u128(&self) -> u128 {
                0xabc
            }
        }
        let token = Token::random(&Fixed);
        assert_eq!(token.as_str().len(), 32);
        assert!(token.matches(token.as_str()));
        assert!(!token.matches(&token.as_str()[..31]));
        assert!(!token.matches(""));
        assert_eq!(query_token(Some("a=1&token=xyz")), Some("xyz"));
        assert_eq!(query_token(None), None);
    }
}
