//! Which link targets the chat shows as links: text from a model, a tool
//! or an MCP server is untrusted, so only `http:`, `https:` and `mailto:`
//! targets become links (never `javascript:`, `data:` or relative ones).

/// URL schemes a link may use (compared case-insensitively).
const SAFE_SCHEMES: [&str; 3] = ["http://", "https://", "mailto:"];

/// True when `url` may be the target of a link.
pub fn is_safe_url(url: &str) -> bool {
    let url = url.trim_start();
    SAFE_SCHEMES.iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(scheme))
    })
}

#[cfg(test)]
mod tests {
    use super::is_safe_url;

    #[test]
    fn only_web_and_mail_targets_are_links() {
        for url in ["https://x.test/a", "HTTP://x.test", " mailto:a@b.c"] {
            assert!(is_safe_url(url), "{url}");
        }
        for url in [
            "javascript:alert(1)",
            "data:text/html,x",
            "/relative",
            "ftp://x",
            "h",
            "",
        ] {
            assert!(!is_safe_url(url), "{url}");
        }
    }
}
