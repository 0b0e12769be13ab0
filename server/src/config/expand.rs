//! `${VAR}` and `${VAR:-default}` expansion for MCP server commands,
//! arguments, environment values and URLs, sub-agent URLs and model names
//! (`llm.model` and a node's `model`, expanded when the file is parsed).

/// Expands `${VAR}` / `${VAR:-default}` using `lookup`. An unset variable
/// without a default expands to the empty string; `$$` is a literal `$`.
pub fn expand_env(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let spec = &body[..end];
            let (name, default) = match spec.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (spec, None),
            };
            match lookup(name).filter(|v| !v.is_empty()) {
                Some(value) => out.push_str(&value),
                None => out.push_str(default.unwrap_or("")),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::expand_env;

    #[test]
    fn expands_set_unset_and_default_variables() {
        let lookup = |name: &str| (name == "HOME").then(|| "/home/me".to_string());
        assert_eq!(expand_env("${HOME}/db", &lookup), "/home/me/db");
        assert_eq!(expand_env("${NOPE:-/tmp}/db", &lookup), "/tmp/db");
        assert_eq!(expand_env("${NOPE}x", &lookup), "x");
        assert_eq!(expand_env("cost $$5 $x", &lookup), "cost $5 $x");
        assert_eq!(expand_env("${unterminated", &lookup), "${unterminated");
    }
}
