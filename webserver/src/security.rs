//! Pure checks of the web server: cross-site request refusal on
//! state-changing requests, the origins allowed to send them, and the
//! same-origin `return_to` of a login.
//!
//! The origins come from the configuration only, never from the request:
//! a DNS-rebinding page on `evil.example:3000` (resolved to 127.0.0.1)
//! sends `Host: evil.example:3000` and `Origin: http://evil.example:3000`,
//! which match each other but no configured origin. (Its `Host` is
//! refused earlier anyway, by `asg_http::host_check`.)

use asg_http::host_check::is_loopback_name;
use axum::http::{HeaderMap, Method};

/// Why a request was refused as cross-site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossSite(pub String);

/// Refuses a state-changing request (anything but GET, HEAD, OPTIONS)
/// that a browser sent from another site: `Sec-Fetch-Site` other than
/// `same-origin` / `none`, or an `Origin` that is not one of `trusted`
/// (this server's configured origins, [`trusted_origins`]). Requests
/// without either header do not come from a browser page and pass (a
/// script with its own credentials is no cross-site risk).
pub fn check_same_origin(
    method: &Method,
    headers: &HeaderMap,
    trusted: &[String],
) -> Result<(), CrossSite> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| v.to_str().unwrap_or("(not text)").trim().to_string())
    };
    if let Some(site) = header("sec-fetch-site")
        && !matches!(site.as_str(), "same-origin" | "none")
    {
        return Err(CrossSite(format!(
            "cross-site request refused (Sec-Fetch-Site: {site})"
        )));
    }
    let Some(origin) = header("origin") else {
        return Ok(());
    };
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    if trusted
        .iter()
        .any(|t| t.trim_end_matches('/').eq_ignore_ascii_case(&origin))
    {
        Ok(())
    } else {
        let shown: String = origin.chars().take(200).collect();
        Err(CrossSite(format!(
            "cross-site request refused (Origin: {shown} is not an origin of this server; \
             set public_url in the web config to the URL browsers open)"
        )))
    }
}

/// The origins that may send state-changing requests: the loopback
/// origins at the listen `port` (`http://localhost:PORT`,
/// `http://127.0.0.1:PORT`, `http://[::1]:PORT`), `http://NAME:PORT` for
/// each allowed host name (normalized), and the origins of the configured
/// URLs (`public_url`, the sign-in redirect URL).
pub fn trusted_origins(port: u16, allowed_names: &[String], urls: &[&str]) -> Vec<String> {
    let mut origins = Vec::new();
    let names = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .chain(allowed_names.iter().map(String::as_str));
    for name in names {
        let host = if name.contains(':') {
            format!("[{name}]")
        } else {
            name.to_string()
        };
        origins.push(match port {
            80 => format!("http://{host}"),
            _ => format!("http://{host}:{port}"),
        });
    }
    origins.extend(urls.iter().filter_map(|url| origin_of(url)));
    origins.dedup();
    origins
}

/// The origin (`scheme://host[:port]`) of an absolute URL.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty() && !authority.contains('@')).then(|| {
        format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            authority.to_ascii_lowercase()
        )
    })
}

/// The host name of an absolute URL (for the names the server answers),
/// unless it is a loopback name (always answered).
pub fn host_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url
        .host_str()?
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    (!is_loopback_name(&host)).then_some(host)
}

/// Longest `return_to` kept.
const MAX_RETURN_TO: usize = 2048;

/// A `return_to` that stays on this site: a path starting with one `/`
/// (not `//`, no backslash, no control characters); anything else
/// (an absolute URL, a scheme-relative `//evil.example`) becomes `/`.
pub fn safe_return_to(return_to: Option<&str>) -> String {
    let Some(path) = return_to.map(str::trim) else {
        return "/".to_string();
    };
    let ok = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path.len() <= MAX_RETURN_TO
        && !path.starts_with("/auth/");
    if ok {
        path.to_string()
    } else {
        "/".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn reads_are_never_refused() {
        let h = headers(&[
            ("origin", "https://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ]);
        assert!(check_same_origin(&Method::GET, &h, &[]).is_ok());
        assert!(check_same_origin(&Method::HEAD, &h, &[]).is_ok());
    }

    fn local() -> Vec<String> {
        trusted_origins(3000, &[], &[])
    }

    #[test]
    fn same_origin_posts_pass() {
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(check_same_origin(&Method::POST, &h, &local()).is_ok());
        for origin in ["http://localhost:3000", "http://[::1]:3000/"] {
            let h = headers(&[("origin", origin)]);
            assert!(
                check_same_origin(&Method::POST, &h, &local()).is_ok(),
                "{origin}"
            );
        }
        // Behind a proxy the Host may differ: the configured origin counts.
        let h = headers(&[
            ("host", "internal:3000"),
            ("origin", "https://chat.example.com"),
        ]);
        assert!(check_same_origin(&Method::POST, &h, &["https://chat.example.com".into()]).is_ok());
        // Scripts send neither header.
        assert!(check_same_origin(&Method::POST, &headers(&[("host", "x")]), &[]).is_ok());
    }

    #[test]
    fn an_origin_matching_the_requests_own_host_is_not_enough() {
        // DNS rebinding: the page's Host and Origin agree with each other.
        let h = headers(&[
            ("host", "evil.example:3000"),
            ("origin", "http://evil.example:3000"),
        ]);
        let err = check_same_origin(&Method::POST, &h, &local()).unwrap_err();
        assert!(err.0.contains("http://evil.example:3000"), "{err:?}");
        let h = headers(&[
            ("host", "chat.lan:3000"),
            ("origin", "http://chat.lan:3000"),
        ]);
        assert!(check_same_origin(&Method::POST, &h, &local()).is_err());
        let allowed = trusted_origins(3000, &["chat.lan".into()], &[]);
        assert!(check_same_origin(&Method::POST, &h, &allowed).is_ok());
    }

    #[test]
    fn trusted_origins_come_from_the_configuration() {
        assert_eq!(
            trusted_origins(
                3000,
                &["chat.lan".into(), "fd00::1".into()],
                &["https://Chat.Example.com/auth/callback", "not a url"]
            ),
            [
                "http://localhost:3000",
                "http://127.0.0.1:3000",
                "http://[::1]:3000",
                "http://chat.lan:3000",
                "http://[fd00::1]:3000",
                "https://chat.example.com",
            ]
        );
        assert_eq!(trusted_origins(80, &[], &[])[0], "http://localhost");
    }

    #[test]
    fn hosts_of_configured_urls() {
        assert_eq!(
            host_of("https://Chat.Example.com:8443/x").as_deref(),
            Some("chat.example.com")
        );
        assert_eq!(host_of("http://[fd00::1]:80/").as_deref(), Some("fd00::1"));
        assert_eq!(host_of("http://127.0.0.1:3000/auth/callback"), None);
        assert_eq!(host_of("http://localhost:3000/"), None);
        assert_eq!(host_of("/relative"), None);
    }

    #[test]
    fn foreign_origins_are_refused() {
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://evil.example"),
        ]);
        let err = check_same_origin(&Method::POST, &h, &local()).unwrap_err();
        assert!(err.0.contains("evil.example"), "{err:?}");
        let h = headers(&[("host", "127.0.0.1:3000"), ("origin", "null")]);
        assert!(check_same_origin(&Method::DELETE, &h, &local()).is_err());
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3001"),
        ]);
        assert!(
            check_same_origin(&Method::PUT, &h, &local()).is_err(),
            "another port"
        );
        let h = headers(&[("host", "127.0.0.1:3000"), ("sec-fetch-site", "cross-site")]);
        assert!(check_same_origin(&Method::POST, &h, &local()).is_err());
        let h = headers(&[("host", "127.0.0.1:3000"), ("sec-fetch-site", "same-site")]);
        assert!(check_same_origin(&Method::POST, &h, &local()).is_err());
    }

    #[test]
    fn origins_of_urls() {
        assert_eq!(
            origin_of("https://Chat.Example.com:8443/auth/callback?x=1").as_deref(),
            Some("https://chat.example.com:8443")
        );
        assert_eq!(
            origin_of("http://127.0.0.1:3000").as_deref(),
            Some("http://127.0.0.1:3000")
        );
        assert_eq!(origin_of("/relative"), None);
        assert_eq!(origin_of("http://user@host/"), None);
    }

    #[test]
    fn return_to_stays_on_this_site() {
        assert_eq!(safe_return_to(None), "/");
        assert_eq!(safe_return_to(Some("/?c=123")), "/?c=123");
        assert_eq!(safe_return_to(Some("/path#x")), "/path#x");
        for bad in [
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example",
            "\\\\evil",
            "javascript:alert(1)",
            "evil.example",
            "/x\ny",
            "/auth/logout",
            "",
        ] {
            assert_eq!(safe_return_to(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_return_to(Some(&format!("/{}", "a".repeat(3000)))), "/");
    }
}
