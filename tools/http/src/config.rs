//! The tool servers' YAML configuration files, read one way: errors name
//! the file and the field path (`serde_path_to_error`), and an empty file
//! gets every default.

use std::path::Path;

use serde::de::DeserializeOwned;

/// Reads and parses the file at `path`; the error names the file.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the configuration: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses configuration text; the error names the field.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    let deserializer = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let field = err.path().to_string();
        let field = if field == "." {
            "(top level)".to_string()
        } else {
            field
        };
        format!("{field}: {}", err.into_inner())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        #[serde(default)]
        port: u16,
    }

    #[test]
    fn errors_name_the_field_and_an_empty_file_is_all_defaults() {
        assert_eq!(parse::<Sample>("").unwrap().port, 0);
        let err = parse::<Sample>("port: high").unwrap_err();
        assert!(err.starts_with("port: "), "{err}");
        let err = parse::<Sample>("nope: 1").unwrap_err();
        assert!(err.starts_with("nope: unknown field `nope`"), "{err}");
        let err = load::<Sample>(Path::new("/nonexistent/x.yaml")).unwrap_err();
        assert!(err.starts_with("/nonexistent/x.yaml: cannot read"), "{err}");
    }
}
