//! The YAML front matter of a `SKILL.md` (the Agent Skills format): a first
//! line `---`, a YAML mapping, a line `---`. It must give `name` (lowercase
//! letters, digits and hyphens, no leading, trailing or doubled hyphen, at
//! most 64 characters) and `description` (not empty, at most 1,024
//! characters); other keys (`license`, `allowed-tools`, `metadata` …) are
//! allowed and ignored. Used on upload and when a turn scans capability
//! directories, so both read a skill the same way.

use super::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// What a `SKILL.md` declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillMeta {
    pub name: String,
    pub description: String,
}

/// Why a `SKILL.md` is not a skill's; the message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("SKILL.md is not UTF-8 text")]
    NotText,
    #[error("SKILL.md must start with YAML front matter: a line `---`, `name:` and `description:`, a line `---`")]
    Missing,
    #[error("SKILL.md front matter is not closed by a line `---`")]
    Unclosed,
    #[error("SKILL.md front matter does not parse as YAML: {0}")]
    Yaml(String),
    #[error("SKILL.md front matter must be a YAML mapping with `name` and `description`")]
    NotMapping,
    #[error("SKILL.md front matter has no `{0}` (a string)")]
    MissingField(&'static str),
    #[error("{0}")]
    BadName(String),
    #[error("{0}")]
    BadDescription(String),
}

/// Checks a skill name: 1–64 of `a-z`, `0-9`, `-`, not starting or ending
/// with `-`, no `--`.
pub fn check_name(name: &str) -> Result<(), String> {
    let shape = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if shape {
        Ok(())
    } else {
        Err(format!(
            "skill name '{name}' is not valid: use 1 to {MAX_NAME_CHARS} lowercase letters, digits and single \
             hyphens, not starting or ending with a hyphen"
        ))
    }
}

/// Checks a skill description: not blank, at most 1,024 characters.
pub fn check_description(description: &str) -> Result<(), String> {
    if description.trim().is_empty() {
        return Err("skill description must not be empty".into());
    }
    let n = description.chars().count();
    if n > MAX_DESCRIPTION_CHARS {
        return Err(format!("skill description is {n} characters; at most {MAX_DESCRIPTION_CHARS} are allowed"));
    }
    Ok(())
}

/// The YAML between the opening and closing `---` lines.
fn header(text: &str) -> Result<&str, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').unwrap_or(text.len());
    if text[..first_end].trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let body = text.get(first_end + 1..).unwrap_or("");
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok(&body[..offset]);
        }
        offset += line.len();
    }
    Err(FrontMatterError::Unclosed)
}

/// Parses and checks the front matter of a `SKILL.md`.
pub fn parse(content: &[u8]) -> Result<SkillMeta, FrontMatterError> {
    let text = std::str::from_utf8(content).map_err(|_| FrontMatterError::NotText)?;
    let yaml = header(text)?;
    let value: serde_yaml::Value = serde_yaml::from_str(yaml).map_err(|e| FrontMatterError::Yaml(e.to_string()))?;
    let serde_yaml::Value::Mapping(map) = value else { return Err(FrontMatterError::NotMapping) };
    let field = |key: &'static str| match map.get(key) {
        Some(serde_yaml::Value::String(s)) => Ok(s.trim().to_string()),
        _ => Err(FrontMatterError::MissingField(key)),
    };
    let (name, description) = (field("name")?, field("description")?);
    check_name(&name).map_err(FrontMatterError::BadName)?;
    check_description(&description).map_err(FrontMatterError::BadDescription)?;
    Ok(SkillMeta { name, description })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_md_gives_its_name_and_description() {
        let md = b"---\nname: pdf-tools\ndescription: >\n  Extracts text\n  from PDFs.\nlicense: MIT\n---\n# PDF\n";
        let meta = parse(md).unwrap();
        assert_eq!(meta, SkillMeta { name: "pdf-tools".into(), description: "Extracts text from PDFs.".into() });
    }

    #[test]
    fn bad_front_matter_is_named() {
        assert_eq!(parse(b"# no header\n"), Err(FrontMatterError::Missing));
        assert_eq!(parse(b"---\nname: a\n"), Err(FrontMatterError::Unclosed));
        assert!(matches!(parse(b"---\nname: [a\n---\n"), Err(FrontMatterError::Yaml(_))));
        assert_eq!(parse(b"---\n- a\n---\n"), Err(FrontMatterError::NotMapping));
        assert_eq!(parse(b"---\nname: a\n---\n"), Err(FrontMatterError::MissingField("description")));
        assert!(matches!(parse(b"---\nname: Bad_Name\ndescription: d\n---\n"), Err(FrontMatterError::BadName(_))));
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert!(matches!(parse(long.as_bytes()), Err(FrontMatterError::BadDescription(_))));
    }

    #[test]
    fn names_follow_the_agent_skills_format() {
        for good in ["a", "pdf-tools", "x2", &"a".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "../x", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
