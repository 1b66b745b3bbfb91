//! Cursor pagination, shared by both backends: `seq` (a per-table counter)
//! gives creation order; `after`/`before` name an item whose `seq` is looked
//! up within the same organization (an unknown one is an error), and one row
//! more than the limit tells whether there are more. The SQL is the same in
//! both dialects (`$n` placeholders); only how `doc` is read differs.

use crate::{Error, Page, Result};
use protocol::list::{Order, PageRequest};
use sqlx::{Database, Pool, Row};

/// A statement being built: SQL text with `$n` placeholders (the same in
/// both dialects) and the values bound to them, bound once the text is done.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    text: String,
    values: Vec<Value>,
}

/// A value bound to a placeholder.
#[derive(Debug)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl Sql {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), values: Vec::new() }
    }

    /// Appends SQL text.
    pub(crate) fn push(&mut self, text: impl AsRef<str>) -> &mut Self {
        self.text.push_str(text.as_ref());
        self
    }

    /// Appends a placeholder bound to `value`.
    pub(crate) fn push_bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.values.push(value.into());
        self.text.push_str(&format!("${}", self.values.len()));
        self
    }

    /// Runs the statement and returns its rows.
    pub(crate) async fn fetch_all<DB>(&self, pool: &Pool<DB>) -> Result<Vec<DB::Row>>
    where
        DB: Database,
        for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
        for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
        for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        i64: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    {
        let mut query = sqlx::query(&self.text);
        for value in &self.values {
            query = match value {
                Value::Text(s) => query.bind(s.as_str()),
                Value::Int(i) => query.bind(*i),
            };
        }
        Ok(query.fetch_all(pool).await?)
    }
}

/// Runs a cursor-paginated `SELECT {doc}` over `table` for one organization,
/// with extra conditions added by `filter`. `doc` is the expression that
/// reads the document as text (`doc`, or `doc::text` over `jsonb`).
pub(crate) async fn page_of<DB, T>(
    pool: &Pool<DB>,
    table: &str,
    doc: &str,
    org_id: &str,
    page: &PageRequest,
    filter: impl Fn(&mut Sql),
) -> Result<Page<T>>
where
    DB: Database,
    T: serde::de::DeserializeOwned,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    i64: for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    for<'r> &'r str: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB>,
    &'static str: sqlx::ColumnIndex<DB::Row>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    // `before` walks backwards from its cursor; the page is then put back in
    // the requested order.
    let (cursor, forward) = match (&page.after, &page.before) {
        (Some(after), _) => (Some(after), true),
        (None, Some(before)) => (Some(before), false),
        (None, None) => (None, true),
    };
    let ascending = (page.order == Order::Asc) == forward;
    let mut q = Sql::new(format!("SELECT {doc} AS doc FROM {table} WHERE org_id = "));
    q.push_bind(org_id.to_string());
    if let Some(cursor) = cursor {
        let seq: Option<i64> = sqlx::query_scalar(&format!("SELECT seq FROM {table} WHERE id = $1 AND org_id = $2"))
            .bind(cursor.as_str())
            .bind(org_id)
            .fetch_optional(pool)
            .await?;
        let seq = seq.ok_or_else(|| Error::UnknownCursor(cursor.clone()))?;
        q.push(if ascending { " AND seq > " } else { " AND seq < " });
        q.push_bind(seq);
    }
    filter(&mut q);
    q.push(if ascending { " ORDER BY seq ASC LIMIT " } else { " ORDER BY seq DESC LIMIT " });
    q.push_bind(i64::from(page.limit) + 1);
    let rows = q.fetch_all(pool).await?;
    let has_more = rows.len() > page.limit as usize;
    let mut items = rows
        .iter()
        .take(page.limit as usize)
        .map(|row| Ok(serde_json::from_str(row.try_get::<&str, _>("doc")?)?))
        .collect::<Result<Vec<T>>>()?;
    if !forward {
        items.reverse();
    }
    Ok(Page { items, has_more })
}

/// The comma-separated scopes column, parsed (unknown names are skipped).
pub(crate) fn parse_scopes(s: &str) -> Vec<protocol::admin::Scope> {
    s.split(',').filter_map(|p| p.parse().ok()).collect()
}
