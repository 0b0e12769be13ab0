//! HTML text for the few pages the servers write themselves (the agent's
//! index page, the email channel's confirmation pages and mails): one
//! escaping function, so every page escapes the same five characters.

/// `text` escaped for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_and_quotes_are_escaped_and_text_is_kept() {
        assert_eq!(
            super::escape(r#"<a href="x" title='y'>&</a> ok"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt; ok"
        );
    }
}
