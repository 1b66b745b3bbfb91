//! Organizations and API keys: the admin endpoints and the CLI share these.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Scope {
    #[serde(rename = "tasks:read")]
    TasksRead,
    #[serde(rename = "tasks:write")]
    TasksWrite,
    #[serde(rename = "vaults:read")]
    VaultsRead,
    #[serde(rename = "vaults:write")]
    VaultsWrite,
    #[serde(rename = "admin")]
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 5] =
        [Scope::TasksRead, Scope::TasksWrite, Scope::VaultsRead, Scope::VaultsWrite, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::TasksRead => "tasks:read",
            Scope::TasksWrite => "tasks:write",
            Scope::VaultsRead => "vaults:read",
            Scope::VaultsWrite => "vaults:write",
            Scope::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s).ok_or_else(|| {
            format!("unknown scope '{s}'; expected one of tasks:read, tasks:write, vaults:read, vaults:write, admin")
        })
    }
}

/// An organization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Organization {
    pub id: String,
    pub object: String,
    pub name: String,
    pub created_at: i64,
}

/// `POST /v1/admin/organizations`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrganizationCreate {
    pub name: String,
}

/// `POST /v1/admin/keys`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyCreate {
    pub organization_id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Defaults to `tasks:read` and `tasks:write`.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
}

/// An API key as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiKey {
    pub id: String,
    pub object: String,
    pub organization_id: String,
    pub name: Option<String>,
    pub scopes: Vec<Scope>,
    /// The first characters of the key, enough to recognise it.
    pub prefix: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A key just created: the only time its secret is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiKeyCreated {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The secret `rbk_…` value. Shown once; only its hash is stored.
    pub secret: String,
}
