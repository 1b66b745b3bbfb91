//! Idempotency keys of creates: claimed before the request runs, finished
//! with its answer, released when it failed (so a retry runs it again).

use super::{Backend, Sql, SqlStore};
use crate::{RequestKey, Result};

/// A claim older than this whose request never finished (its node died)
/// is taken over by the next request with the key.
const ABANDONED_SECS: i64 = 15 * 60;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn claim_request_key_impl(
        &self,
        org_id: &str,
        operation: &str,
        key: &str,
        fingerprint: &str,
        at: i64,
    ) -> Result<RequestKey> {
        let expired = Sql::new("DELETE FROM request_keys WHERE created_at < $1").bind(at - crate::REQUEST_KEY_TTL_SECS);
        self.db.execute(&expired).await?;
        let claim = Sql::new(
            "INSERT INTO request_keys (org_id, operation, key, fingerprint, created_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT DO NOTHING",
        )
        .bind(org_id)
        .bind(operation)
        .bind(key)
        .bind(fingerprint)
        .bind(at);
        if self.changed(claim).await? {
            return Ok(RequestKey::Claimed);
        }
        let read = Sql::new(
            "SELECT fingerprint, status, response, created_at FROM request_keys \
             WHERE org_id = $1 AND operation = $2 AND key = $3",
        )
        .bind(org_id)
        .bind(operation)
        .bind(key);
        let row = self.fetch_optional::<(String, Option<i64>, Option<String>, i64)>(read).await?;
        let Some((stored, status, response, created_at)) = row else {
            // Released between the two statements: the key is free again.
            return Box::pin(self.claim_request_key_impl(org_id, operation, key, fingerprint, at)).await;
        };
        match (status, response) {
            (Some(status), Some(body)) => {
                let status = u16::try_from(status).unwrap_or(200);
                Ok(RequestKey::Done { fingerprint: stored, status, body })
            }
            _ if created_at < at - ABANDONED_SECS => {
                let take = Sql::new(
                    "UPDATE request_keys SET fingerprint = $4, created_at = $5 \
                     WHERE org_id = $1 AND operation = $2 AND key = $3 AND status IS NULL AND created_at = $6",
                )
                .bind(org_id)
                .bind(operation)
                .bind(key)
                .bind(fingerprint)
                .bind(at)
                .bind(created_at);
                if self.changed(take).await? {
                    Ok(RequestKey::Claimed)
                } else {
                    Ok(RequestKey::Running { fingerprint: stored })
                }
            }
            _ => Ok(RequestKey::Running { fingerprint: stored }),
        }
    }

    pub(crate) async fn finish_request_key_impl(
        &self,
        org_id: &str,
        operation: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<()> {
        let sql = Sql::new(
            "UPDATE request_keys SET status = $4, response = $5 WHERE org_id = $1 AND operation = $2 AND key = $3",
        )
        .bind(org_id)
        .bind(operation)
        .bind(key)
        .bind(i64::from(status))
        .bind(body);
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn release_request_key_impl(&self, org_id: &str, operation: &str, key: &str) -> Result<()> {
        let sql =
            Sql::new("DELETE FROM request_keys WHERE org_id = $1 AND operation = $2 AND key = $3 AND status IS NULL")
                .bind(org_id)
                .bind(operation)
                .bind(key);
        self.db.execute(&sql).await.map(drop)
    }
}
