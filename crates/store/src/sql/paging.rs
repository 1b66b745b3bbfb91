//! Cursor pagination: `seq` (a per-table counter) gives creation order;
//! `after`/`before` name an item whose `seq` is looked up within the same
//! organization (an unknown one is an error), and one row more than the limit
//! tells whether there are more.

use super::{Exec, Sql, SqlStore};
use crate::{Error, Page, Result};
use protocol::list::{Order, PageRequest};

impl<B: Exec> SqlStore<B> {
    /// A page of the documents of `table` for one organization, with extra
    /// conditions added by `filter`.
    pub(crate) async fn page_of<T: serde::de::DeserializeOwned>(
        &self,
        table: &str,
        org_id: &str,
        page: &PageRequest,
        filter: impl FnOnce(&mut Sql),
    ) -> Result<Page<T>> {
        // `before` walks backwards from its cursor; the page is then put back in
        // the requested order.
        let (cursor, forward) = match (&page.after, &page.before) {
            (Some(after), _) => (Some(after), true),
            (None, Some(before)) => (Some(before), false),
            (None, None) => (None, true),
        };
        let ascending = (page.order == Order::Asc) == forward;
        let mut q = Sql::new(format!("SELECT doc FROM {table} WHERE org_id = "));
        q.push_bind(org_id);
        if let Some(cursor) = cursor {
            let lookup = Sql::new(format!("SELECT seq FROM {table} WHERE id = $1 AND org_id = $2"))
                .bind(cursor.as_str())
                .bind(org_id);
            let (seq,) =
                self.fetch_optional::<(i64,)>(lookup).await?.ok_or_else(|| Error::UnknownCursor(cursor.clone()))?;
            q.push(if ascending { " AND seq > " } else { " AND seq < " });
            q.push_bind(seq);
        }
        filter(&mut q);
        q.push(if ascending { " ORDER BY seq ASC LIMIT " } else { " ORDER BY seq DESC LIMIT " });
        q.push_bind(i64::from(page.limit) + 1);
        let mut items: Vec<T> = self.docs(q).await?;
        let has_more = items.len() > page.limit as usize;
        items.truncate(page.limit as usize);
        if !forward {
            items.reverse();
        }
        Ok(Page { items, has_more })
    }
}

/// The comma-separated scopes column, parsed (unknown names are skipped).
pub(crate) fn parse_scopes(s: &str) -> Vec<protocol::admin::Scope> {
    s.split(',').filter_map(|p| p.parse().ok()).collect()
}
