//! [`Secret`]: a string that cannot leak by accident. `Debug` and `Display`
//! print `[redacted]`; it has no `Serialize` (a sealed payload opts in field by
//! field with [`Secret::serialize_exposed`]); a deserialization error names the
//! expected type but never the value received; its memory is zeroed on drop.

use serde::de::{self, Deserializer, Visitor};
use zeroize::Zeroize;

/// A secret string. Read it with [`Secret::expose`] only where it is put on the
/// wire or sealed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Length in bytes (safe to report: it does not reveal the value).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// For `#[serde(serialize_with = "Secret::serialize_exposed")]` on the
    /// fields of a payload that is sealed before it leaves memory.
    pub fn serialize_exposed<S: serde::Serializer>(secret: &Secret, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&secret.0)
    }

    /// The same for an optional secret.
    pub fn serialize_exposed_opt<S: serde::Serializer>(
        secret: &Option<Secret>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match secret {
            Some(s) => serializer.serialize_some(&s.0),
            None => serializer.serialize_none(),
        }
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

struct SecretVisitor;

impl<'de> Visitor<'de> for SecretVisitor {
    type Value = Secret;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
        Ok(Secret(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
        Ok(Secret(v))
    }

    // Every other type is refused without echoing what was sent: a number
    // pasted where a token belongs is still somebody's secret.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Other("a boolean"), &self))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Other("a number"), &self))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Other("a number"), &self))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Other("a number"), &self))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Other("bytes"), &self))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Secret, E> {
        Err(E::invalid_type(de::Unexpected::Unit, &self))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Map, &self))
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `deserialize_any` so that a wrong type reaches the visitor, whose error
        // does not echo the value (a format's own type errors may).
        d.deserialize_any(SecretVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_are_redacted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "[redacted] [redacted]");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some([redacted])");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn a_wrongly_typed_secret_is_not_echoed_in_the_error() {
        let err = serde_json::from_str::<Secret>("31415926535").unwrap_err().to_string();
        assert!(!err.contains("31415926535"), "{err}");
        assert!(err.contains("expected a string"), "{err}");
        for other in ["true", "[\"31415926535\"]", "{\"a\":\"31415926535\"}", "null"] {
            let err = serde_json::from_str::<Secret>(other).unwrap_err().to_string();
            assert!(!err.contains("31415926535") && err.contains("expected a string"), "{err}");
        }
        let ok: Secret = serde_json::from_str("\"tok\"").unwrap();
        assert_eq!(ok.expose(), "tok");
    }

    #[test]
    fn serialize_exposed_writes_the_value() {
        #[derive(serde::Serialize)]
        struct Payload {
            #[serde(serialize_with = "Secret::serialize_exposed")]
            token: Secret,
        }
        let json = serde_json::to_string(&Payload { token: "abc".into() }).unwrap();
        assert_eq!(json, r#"{"token":"abc"}"#);
    }
}
