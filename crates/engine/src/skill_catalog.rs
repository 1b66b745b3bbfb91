//! The skills catalog a turn adds to its instructions (progressive
//! disclosure): for each skill only its name, description and the path of
//! its `SKILL.md`, one line each — the model reads the rest with the sandbox
//! tools when it decides to use one. The skills are the environment's own
//! (as the session's view of its environment lists them) and those found when the turn starts in its
//! `capability_directories` (`<dir>/*/SKILL.md`, so skills that setup or the
//! agent wrote there count); a name seen first wins.
//!
//! Size: the header and each line's punctuation add at most 40 bytes per
//! skill to its name, description and path (a test holds it).

use crate::record::Recorder;
use crate::tools::{HostedOutput, HostedTools};
use models::ToolSpec;
use protocol::skill::{HostedSkill, front_matter, skill_md_path};
use sandbox::{FileKind, Sandbox};
use serde_json::Value;
use std::collections::HashSet;
use tokio_util::sync::CancellationToken;

/// The catalog's first line.
const HEADER: &str = "\n\nSkills (read SKILL.md to use):\n";
/// Most skill directories read in one capability directory.
const MAX_SCANNED: usize = 100;
/// Largest `SKILL.md` read while scanning.
const MAX_SKILL_MD: usize = 1 << 20;

/// One skill as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    /// Its `SKILL.md` inside the sandbox.
    pub path: String,
}

/// The environment's own skills.
pub fn installed(skills: &[HostedSkill]) -> Vec<SkillEntry> {
    let entry = |s: &HostedSkill| SkillEntry {
        name: s.name().to_string(),
        description: s.description().to_string(),
        path: skill_md_path(s.name()),
    };
    skills.iter().map(entry).collect()
}

/// The skills in `dirs` of the sandbox whose names are not in `taken` (which
/// they join). Unreadable directories and invalid `SKILL.md`s are skipped.
pub async fn scan(sandbox: &dyn Sandbox, dirs: &[String], taken: &mut HashSet<String>) -> Vec<SkillEntry> {
    let mut found = Vec::new();
    for dir in dirs {
        let Ok(mut entries) = sandbox.list_dir(dir).await else { continue };
        entries.retain(|e| e.kind == FileKind::Dir);
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries.into_iter().take(MAX_SCANNED) {
            let path = format!("{}/{}/SKILL.md", dir.trim_end_matches('/'), e.name);
            let Ok(md) = sandbox.read_file(&path).await else { continue };
            if md.len() > MAX_SKILL_MD {
                continue;
            }
            match front_matter::parse(&md) {
                Ok(meta) if taken.insert(meta.name.clone()) => {
                    found.push(SkillEntry { name: meta.name, description: meta.description, path })
                }
                Ok(_) => {}
                Err(error) => tracing::debug!(%path, %error, "skipping a skill that does not parse"),
            }
        }
    }
    found
}

/// The catalog text (empty for no skills): it starts with a blank line, to
/// follow the agent's instructions.
pub fn render(skills: &[SkillEntry]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from(HEADER);
    for s in skills {
        let description = s.description.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("- {}: {} {}\n", s.name, description, s.path));
    }
    text
}

/// The catalog as a hosted tool set that offers no tools, only instructions.
pub struct Catalog {
    pub text: String,
}

#[async_trait::async_trait]
impl HostedTools for Catalog {
    fn specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    fn handles(&self, _name: &str) -> bool {
        false
    }

    fn instructions(&self) -> Option<String> {
        Some(self.text.clone()).filter(|t| !t.is_empty())
    }

    async fn call(&self, name: &str, _: &str, _: Value, _: &mut Recorder, _: &CancellationToken) -> HostedOutput {
        HostedOutput::text(format!("error: no tool named {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> SkillEntry {
        SkillEntry { name: name.into(), description: description.into(), path: skill_md_path(name) }
    }

    #[test]
    fn the_catalog_adds_at_most_40_bytes_per_skill_to_name_description_and_path() {
        for skills in [vec![entry("a", "b")], vec![entry("pdf-tools", "Reads PDFs."), entry("x", "y z")]] {
            let text = render(&skills);
            let own: usize = skills.iter().map(|s| s.name.len() + s.description.len() + s.path.len()).sum();
            assert!(text.len() <= own + 40 * skills.len(), "{} > {} + 40 × {}", text.len(), own, skills.len());
            for s in &skills {
                assert!(text.contains(&format!("- {}: {} {}\n", s.name, s.description, s.path)), "{text}");
            }
        }
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn descriptions_are_one_line() {
        let text = render(&[entry("a", "two\n  lines")]);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("- ")).collect::<Vec<_>>(),
            ["- a: two lines /workspace/.agents/skills/a/SKILL.md"]
        );
    }
}
