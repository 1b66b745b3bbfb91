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

/// An event's id: its sequence number (ordered across the server), shown as
/// `evt_` and 19 digits so that string order is numeric order for every one.
/// Formatted only when serialized, parsed only from what a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventId(i64);

impl EventId {
    const PREFIX: &'static str = "evt_";

    /// The event of sequence number `seq`.
    pub fn from_seq(seq: i64) -> Self {
        Self(seq)
    }

    /// Its sequence number.
    pub fn seq(self) -> i64 {
        self.0
    }

    /// Parses `evt_<sequence>` (a `Last-Event-ID`, a stored event).
    pub fn parse(id: &str) -> Option<Self> {
        id.strip_prefix(Self::PREFIX)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .map(Self)
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{:019}", Self::PREFIX, self.0)
    }
}

impl serde::Serialize for EventId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for EventId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&id).ok_or_else(|| serde::de::Error::custom(format!("'{id}' is not an event id")))
    }
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
    fn event_ids_order_as_strings_and_round_trip() {
        let (a, b) = (EventId::from_seq(9), EventId::from_seq(10));
        assert!(a.to_string() < b.to_string());
        assert_eq!(EventId::parse(&b.to_string()), Some(b));
        assert_eq!(serde_json::from_value::<EventId>(serde_json::to_value(a).unwrap()).unwrap(), a);
        for bad in ["evt_", "evt_-1", "evt_+1", "10", "evt_1x"] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
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
