//! Id formats. Sessions are UUIDs on the Session API and `conv_<uuid>` on the
//! Conversations and Responses APIs (the same row); turns are UUIDs and
//! `resp_<uuid>` likewise. Other resources use a prefix and 32 hex digits.

use uuid::Uuid;

/// Prefix of a Session seen through the Conversations API.
pub const CONVERSATION_PREFIX: &str = "conv_";
/// Prefix of a Turn seen through the Responses API.
pub const RESPONSE_PREFIX: &str = "resp_";
/// Prefix of every organization API key.
pub const API_KEY_PREFIX: &str = "rbk_";

/// The kinds of prefixed ids this server mints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Agent,
    Organization,
    ApiKey,
    /// `skill_…` (the Skills API).
    Skill,
    /// `skillver_…`: one version of a skill.
    SkillVersion,
    /// `file-…` (the Files API; the client's examples use a hyphen).
    File,
}

impl Kind {
    /// The prefix, including its separator (`_`, or `-` for files).
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Agent => "agent_",
            Kind::Organization => "org_",
            Kind::ApiKey => "key_",
            Kind::Skill => "skill_",
            Kind::SkillVersion => "skillver_",
            Kind::File => "file-",
        }
    }

    /// A new random id of this kind.
    pub fn mint(self) -> String {
        format!("{}{}", self.prefix(), Uuid::new_v4().simple())
    }

    /// Whether `id` has this kind's shape (prefix then 32 lowercase hex digits).
    pub fn matches(self, id: &str) -> bool {
        id.strip_prefix(self.prefix())
            .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

/// A new Session id (a UUID, version 4).
pub fn new_session_id() -> Uuid {
    Uuid::new_v4()
}

/// Parses a Session id as the Session API shows it (a bare UUID).
pub fn parse_session_id(id: &str) -> Option<Uuid> {
    Uuid::parse_str(id).ok().filter(|_| id.len() == 36)
}

/// Parses a Conversation id (`conv_<uuid>`) into its Session UUID.
pub fn parse_conversation_id(id: &str) -> Option<Uuid> {
    id.strip_prefix(CONVERSATION_PREFIX).and_then(parse_session_id)
}

/// The Conversation id of a Session.
pub fn conversation_id(session: Uuid) -> String {
    format!("{CONVERSATION_PREFIX}{session}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_ids_round_trip_to_the_session_uuid() {
        let id = new_session_id();
        assert_eq!(parse_conversation_id(&conversation_id(id)), Some(id));
        assert_eq!(parse_conversation_id(&id.to_string()), None);
        assert_eq!(parse_session_id("conv_x"), None);
        assert_eq!(parse_session_id(&id.simple().to_string()), None);
    }

    #[test]
    fn minted_ids_match_their_kind_only() {
        let agent = Kind::Agent.mint();
        assert!(Kind::Agent.matches(&agent));
        assert!(!Kind::ApiKey.matches(&agent));
        assert!(!Kind::Agent.matches("agent_../../etc"));
        let (skill, file) = (Kind::Skill.mint(), Kind::File.mint());
        assert!(skill.starts_with("skill_") && Kind::Skill.matches(&skill) && !Kind::SkillVersion.matches(&skill));
        assert!(file.starts_with("file-") && Kind::File.matches(&file));
    }
}
