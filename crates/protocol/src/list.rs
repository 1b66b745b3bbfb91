//! Cursor pagination as the client's list params describe it: `limit` (1–100,
//! default 20), `after`, `before` and `order` (`asc` or `desc`, default `desc`).

use serde::{Deserialize, Serialize};

/// Sort order of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    #[default]
    Desc,
}

/// The smallest and largest page a caller may ask for.
pub const MAX_LIMIT: u32 = 100;
/// The page size when `limit` is omitted.
pub const DEFAULT_LIMIT: u32 = 20;

/// A validated page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub after: Option<String>,
    pub before: Option<String>,
    pub order: Order,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self { limit: DEFAULT_LIMIT, after: None, before: None, order: Order::Desc }
    }
}

/// The list envelope: `{"object":"list","data":[…],"first_id","last_id","has_more"}`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "{T}List")]
pub struct List<T> {
    pub object: ListObject,
    pub data: Vec<T>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// The constant `"list"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListObject {
    List,
}

impl<T> List<T> {
    /// Wraps one page, naming its first and last ids with `id_of`.
    pub fn new(data: Vec<T>, has_more: bool, id_of: impl Fn(&T) -> String) -> Self {
        let first_id = data.first().map(&id_of);
        let last_id = data.last().map(&id_of);
        Self { object: ListObject::List, data, first_id, last_id, has_more }
    }
}
