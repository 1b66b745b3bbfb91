//! Internally tagged enums (`{"type": …, …}`) whose errors keep the field
//! path: serde's own tagged enums buffer the content and lose it, so a wrong
//! type at `tools[0].description` would be reported at `tools[0]`. Errors here
//! read "at `field`: …", which the server folds into the error's `param`.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Error};
use serde_json::{Map, Value};

/// Reads the object and its `type`, which must be one of `variants`.
pub fn split<'de, D: serde::Deserializer<'de>>(
    d: D,
    variants: &'static [&'static str],
) -> Result<(String, Value), D::Error> {
    split_refusing(d, variants, &[])
}

/// [`split`], naming the feature of a `type` this server knows and does not
/// offer (`(type, feature)` in `refused`) rather than calling it unknown.
pub fn split_refusing<'de, D: serde::Deserializer<'de>>(
    d: D,
    variants: &'static [&'static str],
    refused: &[(&str, &str)],
) -> Result<(String, Value), D::Error> {
    let mut object = Map::<String, Value>::deserialize(d)?;
    let kind = match object.remove("type") {
        Some(Value::String(kind)) => kind,
        Some(_) => return Err(D::Error::custom("at `type`: expected a string")),
        None => return Err(D::Error::missing_field("type")),
    };
    let supported = || variants.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ");
    if let Some((_, feature)) = refused.iter().find(|(k, _)| *k == kind) {
        return Err(D::Error::custom(format_args!(
            "at `type`: {feature} (`{kind}`) is not supported by this server; supported: {}",
            supported()
        )));
    }
    if !variants.contains(&kind.as_str()) {
        return Err(D::Error::custom(format_args!(
            "at `type`: unknown variant `{kind}`, expected one of {}",
            variants.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok((kind, Value::Object(object)))
}

/// Reads one variant's fields, reporting where a field went wrong.
pub fn variant<'de, T: DeserializeOwned, D: serde::Deserializer<'de>>(rest: Value) -> Result<T, D::Error> {
    serde_path_to_error::deserialize(rest).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." { D::Error::custom(inner) } else { D::Error::custom(format_args!("at `{path}`: {inner}")) }
    })
}
