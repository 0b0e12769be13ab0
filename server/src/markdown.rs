//! Agent answers and questions as Markdown, turned into HTML that is
//! safe to inject: the web chat shows what `POST /markdown` returns with
//! `inner_html` (rendering here keeps the Markdown parser out of the
//! chat's bundle). The model's text is untrusted, so no HTML from it ever
//! reaches the page as markup.
//!
//! - Raw HTML (`Event::Html`, `Event::InlineHtml`) becomes text, escaped by
//!   the renderer like any other text.
//! - Links keep only `http:`, `https:` and `mailto:` destinations (and
//!   e-mail autolinks); any other (`javascript:`, `data:`, relative) link
//!   is reduced to its text. Kept links open in a new tab without an opener.
//! - Images are not loaded (a remote image tells its server who reads the
//!   chat): a safe one becomes a link to it, labelled with its alt text.
//!
//! Every tag that can appear in the output comes from pulldown-cmark's
//! renderer or from [`anchor`] here; attribute values are escaped.

use asg_http::html::escape;
use asg_shared::links::is_safe_url;
use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// The Markdown extensions on top of CommonMark.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Renders Markdown to HTML that contains no markup from `text` itself.
pub fn render_markdown(text: &str) -> String {
    let mut links: Vec<Opened> = Vec::new();
    let events = Parser::new_ext(text, options()).filter_map(|event| sanitize(event, &mut links));
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// What became of an open link or image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// Rendered as `<a>`.
    Kept,
    /// Reduced to its text.
    Dropped,
    /// An autolink that is no safe link (`<reqwest::Client>` in an error):
    /// shown as the text it was, brackets included.
    AsText,
}

/// One event made safe. `links` remembers what became of each open link
/// or image, so its end tag is kept or dropped alike (images can sit
/// inside links).
fn sanitize<'a>(event: Event<'a>, links: &mut Vec<Opened>) -> Option<Event<'a>> {
    match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            ..
        }) => {
            let href = match link_type {
                LinkType::Email => Some(format!("mailto:{dest_url}")),
                _ if is_safe_url(&dest_url) => Some(dest_url.to_string()),
                _ => None,
            };
            match href {
                Some(href) => {
                    links.push(Opened::Kept);
                    Some(Event::Html(anchor(&href, &title, None).into()))
                }
                None if link_type == LinkType::Autolink => {
                    links.push(Opened::AsText);
                    Some(Event::Text(CowStr::Borrowed("<")))
                }
                None => {
                    links.push(Opened::Dropped);
                    None
                }
            }
        }
        Event::Start(Tag::Image {
            dest_url, title, ..
        }) => {
            let safe = is_safe_url(&dest_url);
            links.push(if safe { Opened::Kept } else { Opened::Dropped });
            safe.then(|| Event::Html(anchor(&dest_url, &title, Some("md-image")).into()))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => match links.pop() {
            Some(Opened::Kept) => Some(Event::Html(CowStr::Borrowed("</a>"))),
            Some(Opened::AsText) => Some(Event::Text(CowStr::Borrowed(">"))),
            Some(Opened::Dropped) | None => None,
        },
        other => Some(other),
    }
}

/// An opening `<a>` tag with escaped attributes.
fn anchor(href: &str, title: &str, class: Option<&str>) -> String {
    let mut tag = format!(
        "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"",
        escape(href)
    );
    if !title.is_empty() {
        tag.push_str(&format!(" title=\"{}\"", escape(title)));
    }
    if let Some(class) = class {
        tag.push_str(&format!(" class=\"{class}\""));
    }
    tag.push('>');
    tag
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No element made of the input survives: every `<` in the output
    /// starts one of the tags the renderer writes.
    fn assert_only_known_tags(html: &str) {
        const KNOWN: [&str; 22] = [
            "p>",
            "/p>",
            "strong>",
            "/strong>",
            "em>",
            "/em>",
            "code",
            "/code>",
            "pre>",
            "/pre>",
            "ul>",
            "/ul>",
            "ol>",
            "/ol",
            "li>",
            "/li>",
            "a ",
            "/a>",
            "br />",
            "h1>",
            "/h1>",
            "blockquote>",
        ];
        for (index, _) in html.match_indices('<') {
            let rest = &html[index + 1..];
            assert!(
                KNOWN.iter().any(|tag| rest.starts_with(tag)),
                "unexpected tag at {index} in {html}"
            );
        }
    }

    #[test]
    fn bold_lists_and_code_blocks_render() {
        let html = render_markdown("**Done.**\n\n- one\n- two\n\n```rust\nlet x = 1 < 2;\n```\n");
        assert!(html.contains("<strong>Done.</strong>"), "{html}");
        assert!(
            html.contains("<ul>\n<li>one</li>\n<li>two</li>\n</ul>"),
            "{html}"
        );
        assert!(
            html.contains("<pre><code class=\"language-rust\">let x = 1 &lt; 2;\n</code></pre>"),
            "{html}"
        );
        assert!(render_markdown("1. a\n2. b").contains("<ol>"));
        assert!(render_markdown("use `x<y`").contains("<code>x&lt;y</code>"));
        assert_only_known_tags(&html);
    }

    #[test]
    fn a_script_block_is_text() {
        let html = render_markdown("<script>alert(1)</script>\n\nafter");
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert_only_known_tags(&html);
    }

    #[test]
    fn inline_html_with_handlers_is_text() {
        let html = render_markdown("look: <img src=x onerror=alert(1)> and <b onclick=x>b</b>");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b "), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert_only_known_tags(&html);
    }

    #[test]
    fn javascript_and_data_links_keep_only_their_text() {
        for url in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "/relative",
        ] {
            let html = render_markdown(&format!("[click]({url})"));
            assert_eq!(html, "<p>click</p>\n", "{url}");
        }
        let html = render_markdown("<javascript:alert(1)>");
        assert!(!html.contains("href"), "{html}");
    }

    #[test]
    fn safe_links_open_in_a_new_tab_with_escaped_attributes() {
        let html = render_markdown("[docs](<https://example.com/?a=1&b=\"2\"> 'say \"hi\"')");
        assert!(
            html.contains("href=\"https://example.com/?a=1&amp;b=&quot;2&quot;\""),
            "{html}"
        );
        assert!(html.contains("rel=\"noopener noreferrer nofollow\" target=\"_blank\""));
        assert!(
            html.contains("title=\"say &quot;hi&quot;\">docs</a>"),
            "{html}"
        );
        assert!(render_markdown("<https://x.test>").contains("href=\"https://x.test\""));
        assert!(render_markdown("<ops@x.test>").contains("href=\"mailto:ops@x.test\""));
        assert!(render_markdown("[m](MAILTO:a@b.c)").contains("href=\"MAILTO:a@b.c\""));
    }

    #[test]
    fn images_become_links_or_their_alt_text() {
        let html = render_markdown("![a chart](https://x.test/c.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("class=\"md-image\">a chart</a>"), "{html}");
        let html = render_markdown("![pwn](javascript:alert(1))");
        assert_eq!(html, "<p>pwn</p>\n");
        // An image inside a dropped link keeps the nesting balanced.
        let html = render_markdown("[![i](https://x.test/i.png)](javascript:x) tail");
        assert_eq!(html.matches("<a ").count(), html.matches("</a>").count());
    }

    #[test]
    fn plain_text_stays_plain() {
        assert_eq!(
            render_markdown("There are 0 resources"),
            "<p>There are 0 resources</p>\n"
        );
        assert_eq!(
            render_markdown("Created: {\"id\":\"res_1\"}"),
            "<p>Created: {\"id\":\"res_1\"}</p>\n"
        );
    }

    #[test]
    fn a_type_path_in_angle_brackets_stays_text() {
        let html = render_markdown("error: Transport [Worker<reqwest::async_impl::Client>] failed");
        assert!(
            html.contains("&lt;reqwest::async_impl::Client&gt;"),
            "{html}"
        );
        assert!(!html.contains("<a "), "{html}");
        let link = render_markdown("see <https://example.com/x>");
        assert!(link.contains("<a href=\"https://example.com/x\""), "{link}");
    }
}
