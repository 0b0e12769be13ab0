//! Pure checks of the web server: cross-site request refusal on
//! state-changing requests, and the same-origin `return_to` of a login.

use axum::http::{HeaderMap, Method};

/// Why a request was refused as cross-site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossSite(pub String);

/// Refuses a state-changing request (anything but GET, HEAD, OPTIONS)
/// that a browser sent from another site: `Sec-Fetch-Site` other than
/// `same-origin` / `none`, or an `Origin` that is neither this server
/// (scheme and the request's `Host`) nor one of `trusted` (e.g. the
/// origin of the redirect URL, for a server behind a proxy). Requests
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
    let host = header("host").unwrap_or_default().to_ascii_lowercase();
    let own = !host.is_empty()
        && (origin == format!("http://{host}") || origin == format!("https://{host}"));
    let trusted = trusted
        .iter()
        .any(|t| t.trim_end_matches('/').eq_ignore_ascii_case(&origin));
    if own || trusted {
        Ok(())
    } else {
        Err(CrossSite(format!(
            "cross-site request refused (Origin: {origin})"
        )))
    }
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

    #[test]
    fn same_origin_posts_pass() {
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(check_same_origin(&Method::POST, &h, &[]).is_ok());
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
    fn foreign_origins_are_refused() {
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://evil.example"),
        ]);
        let err = check_same_origin(&Method::POST, &h, &[]).unwrap_err();
        assert!(err.0.contains("evil.example"), "{err:?}");
        let h = headers(&[("host", "127.0.0.1:3000"), ("origin", "null")]);
        assert!(check_same_origin(&Method::DELETE, &h, &[]).is_err());
        let h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3001"),
        ]);
        assert!(
            check_same_origin(&Method::PUT, &h, &[]).is_err(),
            "another port"
        );
        let h = headers(&[("host", "127.0.0.1:3000"), ("sec-fetch-site", "cross-site")]);
        assert!(check_same_origin(&Method::POST, &h, &[]).is_err());
        let h = headers(&[("host", "127.0.0.1:3000"), ("sec-fetch-site", "same-site")]);
        assert!(check_same_origin(&Method::POST, &h, &[]).is_err());
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
