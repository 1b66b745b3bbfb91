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
    /// `file_…`: one file of an environment's listing.
    EnvironmentFile,
    /// `art_…`: a session's artifact.
    Artifact,
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
            Kind::EnvironmentFile => "file_",
            Kind::Artifact => "art_",
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

/// Ids that are UUIDs on one API and a prefixed UUID on another: shown
/// hyphenated, (de)serialized as that string, and parsed only here.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $prefix:ident, $alias:ident, $parse_alias:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Uuid);

        impl $name {
            /// A new random id (a UUID, version 4).
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            /// The id of a UUID a store kept.
            pub fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// Its UUID (what a store binds).
            pub fn uuid(self) -> Uuid {
                self.0
            }

            /// Parses the bare form (a hyphenated UUID, as the Session API shows it).
            pub fn parse(id: &str) -> Option<Self> {
                Uuid::parse_str(id).ok().filter(|_| id.len() == 36).map(Self)
            }

            /// Parses the prefixed form.
            pub fn $parse_alias(id: &str) -> Option<Self> {
                id.strip_prefix($prefix).and_then(Self::parse)
            }

            /// The prefixed form.
            pub fn $alias(self) -> String {
                format!("{}{}", $prefix, self.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(&self.0.hyphenated())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let id = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::parse(&id).ok_or_else(|| serde::de::Error::custom(format!("'{id}' is not a UUID")))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "Uuid".into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "format": "uuid"})
            }
        }
    };
}

uuid_id!(
    /// A Session: a UUID on the Session API, `conv_<uuid>` on the
    /// Conversations and Responses APIs (the same row).
    SessionId,
    CONVERSATION_PREFIX,
    conversation,
    parse_conversation
);

uuid_id!(
    /// A Turn: a UUID on the Session API, `resp_<uuid>` on the Responses API.
    TurnId,
    RESPONSE_PREFIX,
    response,
    parse_response
);

/// Ids of a prefix and 32 lowercase hex digits, typed per resource: minted,
/// (de)serialized as that string, and parsed only here.
macro_rules! hex_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A new random id.
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                Self(format!("{}{}", Self::PREFIX, Uuid::new_v4().simple()))
            }

            /// Parses the prefix and 32 hex digits.
            pub fn parse(id: &str) -> Option<Self> {
                id.strip_prefix(Self::PREFIX)
                    .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| Self(id.to_string()))
            }

            /// The id as shown.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;

            fn try_from(id: String) -> Result<Self, String> {
                Self::parse(&id).ok_or_else(|| format!(concat!("'{}' is not ", $what), id))
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string"})
            }
        }
    };
}

hex_id!(
    /// An Environment (`env_` and 32 hex digits).
    EnvironmentId,
    "env_",
    "an environment id"
);

hex_id!(
    /// An environment template (`envtpl_` and 32 hex digits).
    EnvironmentTemplateId,
    "envtpl_",
    "an environment template id"
);

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
        let id = SessionId::new();
        assert_eq!(SessionId::parse_conversation(&id.conversation()), Some(id));
        assert_eq!(SessionId::parse_conversation(&id.to_string()), None);
        assert_eq!(SessionId::parse("conv_x"), None);
        assert_eq!(SessionId::parse(&id.uuid().simple().to_string()), None);
        let turn = TurnId::new();
        assert_eq!(TurnId::parse_response(&turn.response()), Some(turn));
        assert_eq!(serde_json::to_value(turn).unwrap(), serde_json::json!(turn.to_string()));
        assert_eq!(serde_json::from_value::<TurnId>(serde_json::json!(turn.to_string())).unwrap(), turn);
        assert!(serde_json::from_value::<TurnId>(serde_json::json!("resp_x")).is_err());
    }

    #[test]
    fn environment_ids_have_their_shape() {
        let env = EnvironmentId::new();
        assert_eq!(EnvironmentId::parse(env.as_str()), Some(env.clone()));
        for bad in ["env_", "env_../../x", "agent_0123456789abcdef0123456789abcdef"] {
            assert_eq!(EnvironmentId::parse(bad), None, "{bad}");
        }
        assert!(serde_json::from_value::<EnvironmentId>(serde_json::json!("env_1")).is_err());
        let template = EnvironmentTemplateId::new();
        assert!(template.as_str().starts_with("envtpl_"));
        assert_eq!(EnvironmentTemplateId::parse(template.as_str()), Some(template.clone()));
        assert_eq!(EnvironmentTemplateId::parse(env.as_str()), None);
        assert_eq!(EnvironmentId::parse(template.as_str()), None);
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
