//! [`Doc`]: a resource's JSON document as a column value. SQLite keeps it as
//! `TEXT`, PostgreSQL as `jsonb`; the same statements read and write both,
//! as this type encodes and decodes each backend's column type.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueFormat, PgValueRef, Postgres};
use sqlx::sqlite::{Sqlite, SqliteArgumentValue, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Encode, Type};

/// A document's JSON text.
#[derive(Debug, Clone)]
pub(crate) struct Doc(pub String);

impl Doc {
    /// Parses the document.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> crate::Result<T> {
        Ok(serde_json::from_str(&self.0)?)
    }
}

/// `jsonb`'s type id.
const JSONB: PgTypeInfo = PgTypeInfo::with_oid(sqlx::postgres::types::Oid(3802));
/// The version byte of `jsonb`'s binary format.
const JSONB_VERSION: u8 = 1;

impl Type<Postgres> for Doc {
    fn type_info() -> PgTypeInfo {
        JSONB
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        *ty == JSONB || <String as Type<Postgres>>::compatible(ty)
    }
}

impl Encode<'_, Postgres> for Doc {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(JSONB_VERSION);
        buf.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

impl<'r> Decode<'r, Postgres> for Doc {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let bytes = value.as_bytes()?;
        let text = match value.format() {
            PgValueFormat::Binary if *sqlx::ValueRef::type_info(&value) == JSONB => match bytes.split_first() {
                Some((&JSONB_VERSION, rest)) => rest,
                _ => return Err("unknown jsonb format version".into()),
            },
            _ => bytes,
        };
        Ok(Doc(std::str::from_utf8(text)?.to_owned()))
    }
}

impl Type<Sqlite> for Doc {
    fn type_info() -> SqliteTypeInfo {
        <String as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <String as Type<Sqlite>>::compatible(ty)
    }
}

impl<'q> Encode<'q, Sqlite> for Doc {
    fn encode_by_ref(&self, args: &mut Vec<SqliteArgumentValue<'q>>) -> Result<IsNull, BoxDynError> {
        <String as Encode<'q, Sqlite>>::encode_by_ref(&self.0, args)
    }
}

impl<'r> Decode<'r, Sqlite> for Doc {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Doc(<String as Decode<'r, Sqlite>>::decode(value)?))
    }
}
