//! The HTML pages a mail's links lead to: the confirmation form (the
//! approval shown, one button that POSTs the decision, a reason field
//! for a rejection) and the pages that say what happened or why a link
//! was refused. Everything shown is escaped; the pages have no script and
//! load nothing (`door` sends them with a strict Content-Security-Policy).

use asg_shared::PendingApproval;

use super::mail::{arguments_shown, escape_html, facts};
use super::token::Decision;

/// Longest rejection reason accepted, in characters.
pub const MAX_REASON_CHARS: usize = 1_000;

/// A page shell around `body` (already escaped HTML).
fn document(agent: &str, title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{title} — {agent}</title>\n<style>body{{font-family:sans-serif;max-width:42em;\
         margin:2em auto;padding:0 1em}}pre{{background:#f4f4f4;padding:1em;overflow:auto}}\
         th{{text-align:left;padding-right:1em}}</style></head>\n<body>\n<h1>{title}</h1>\n{body}\
         </body></html>\n",
        title = escape_html(title),
        agent = escape_html(agent),
    )
}

/// A page that says what happened (or why not).
pub fn message(agent: &str, title: &str, text: &str) -> String {
    document(agent, title, &format!("<p>{}</p>\n", escape_html(text)))
}

/// The confirmation form for `decision` on `approval`.
pub fn confirm(agent: &str, approval: &PendingApproval, decision: Decision, token: &str) -> String {
    let rows: String = facts(approval)
        .iter()
        .map(|(label, value)| format!("<tr><th>{label}</th><td>{}</td></tr>\n", escape_html(value)))
        .collect();
    let (title, button, reason) = match decision {
        Decision::Approve => ("Approve this call?", "Approve", String::new()),
        Decision::Reject => (
            "Reject this call?",
            "Reject",
            format!(
                "<p><label for=\"reason\">Reason (optional)</label><br>\n\
                 <textarea id=\"reason\" name=\"reason\" rows=\"3\" cols=\"60\" \
                 maxlength=\"{MAX_REASON_CHARS}\"></textarea></p>\n"
            ),
        ),
    };
    let body = format!(
        "<table>\n{rows}</table>\n<p>Arguments:</p>\n<pre>{arguments}</pre>\n\
         <form method=\"post\" action=\"decide\">\n\
         <input type=\"hidden\" name=\"approval\" value=\"{uuid}\">\n\
         <input type=\"hidden\" name=\"decision\" value=\"{decision}\">\n\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\n{reason}\
         <p><button type=\"submit\">{button}</button></p>\n</form>\n\
         <p>Nothing is decided until you press {button}.</p>\n",
        arguments = escape_html(&arguments_shown(approval)),
        uuid = approval.uuid,
        decision = decision.as_str(),
        token = escape_html(token),
    );
    document(agent, title, &body)
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_confirmation_escapes_and_posts_the_decision() {
        let approval = PendingApproval {
            tool_args: json!({"x": "</pre><script>steal()</script>"})
                .as_object()
                .cloned()
                .unwrap(),
            ..fixtures::pending_approval("<i>tool</i>")
        };
        let page = confirm("agent<1>", &approval, Decision::Reject, "tok\"en");
        assert!(
            !page.contains("<script>") && !page.contains("<i>tool"),
            "{page}"
        );
        assert!(page.contains("&lt;/pre&gt;&lt;script&gt;"), "{page}");
        assert!(page.contains("agent&lt;1&gt;"), "{page}");
        assert!(page.contains("method=\"post\" action=\"decide\""), "{page}");
        assert!(
            page.contains("name=\"decision\" value=\"reject\""),
            "{page}"
        );
        assert!(page.contains("value=\"tok&quot;en\""), "{page}");
        assert!(page.contains("name=\"reason\""), "{page}");
        let approve = confirm("a", &approval, Decision::Approve, "t");
        assert!(!approve.contains("name=\"reason\""), "{approve}");
        assert!(approve.contains(">Approve</button>"), "{approve}");
    }

    #[test]
    fn messages_are_escaped() {
        let page = message("a", "Refused", "tool <b>x</b> & co");
        assert!(
            page.contains("tool &lt;b&gt;x&lt;/b&gt; &amp; co"),
            "{page}"
        );
    }
}
