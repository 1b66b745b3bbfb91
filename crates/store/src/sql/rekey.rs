//! Every value sealed with the master key, read and replaced at once, for
//! `rebyte keys rotate-master`: credentials' `sealed` column and the
//! `sealed_mcp_secrets` field of session, agent and agent-version documents.
//! The replacement is one transaction that first swaps the key check value
//! (only if it is still the old key's), so a database is never half under
//! one key and half under another.

use super::{Doc, Exec, Sql, SqlStore};
use crate::{Result, Sealed, SealedKind};

/// The document field that holds a record's sealed MCP secrets.
const FIELD: &str = "sealed_mcp_secrets";

fn sealed_field(doc: &str) -> Result<Option<String>> {
    let value: serde_json::Value = serde_json::from_str(doc)?;
    Ok(value.get(FIELD).and_then(serde_json::Value::as_str).map(str::to_string))
}

fn with_field(doc: &str, sealed: &[u8]) -> Result<String> {
    let mut value: serde_json::Value = serde_json::from_str(doc)?;
    if let Some(object) = value.as_object_mut() {
        object.insert(FIELD.into(), String::from_utf8_lossy(sealed).into_owned().into());
    }
    Ok(serde_json::to_string(&value)?)
}

impl<B: Exec> SqlStore<B> {
    pub(crate) async fn sealed_values_impl(&self) -> Result<Vec<Sealed>> {
        let mut out = Vec::new();
        let credentials = Sql::new("SELECT org_id, vault_id, id, sealed FROM vault_credentials ORDER BY seq");
        for (org_id, vault_id, id, value) in self.fetch::<(String, String, String, Vec<u8>)>(credentials).await? {
            out.push(Sealed { kind: SealedKind::Credential, org_id, key: vec![vault_id, id], value });
        }
        for (kind, table) in [(SealedKind::Session, "sessions"), (SealedKind::Agent, "agents")] {
            let sql = Sql::new(format!("SELECT org_id, id, doc FROM {table} ORDER BY seq"));
            for (org_id, id, doc) in self.fetch::<(String, String, Doc)>(sql).await? {
                if let Some(value) = sealed_field(doc.0.as_str())? {
                    out.push(Sealed { kind, org_id, key: vec![id], value: value.into_bytes() });
                }
            }
        }
        let versions = Sql::new(
            "SELECT a.org_id, v.agent_id, v.version, v.doc FROM agent_versions v JOIN agents a ON a.id = v.agent_id \
             ORDER BY v.agent_id, v.version",
        );
        for (org_id, id, version, doc) in self.fetch::<(String, String, i64, Doc)>(versions).await? {
            if let Some(value) = sealed_field(doc.0.as_str())? {
                let key = vec![id, version.to_string()];
                out.push(Sealed { kind: SealedKind::AgentVersion, org_id, key, value: value.into_bytes() });
            }
        }
        Ok(out)
    }

    pub(crate) async fn replace_sealed_impl(
        &self,
        old_check: &[u8],
        new_check: &[u8],
        values: &[Sealed],
    ) -> Result<bool> {
        let first = Sql::new("UPDATE master_key_check SET sealed = $1 WHERE id = 1 AND sealed = $2")
            .bind(new_check)
            .bind(old_check);
        let mut then = Vec::with_capacity(values.len());
        for v in values {
            let org = v.org_id.as_str();
            let key = |i: usize| v.key.get(i).cloned().unwrap_or_default();
            let sql = match v.kind {
                SealedKind::Credential => {
                    Sql::new("UPDATE vault_credentials SET sealed = $1 WHERE org_id = $2 AND vault_id = $3 AND id = $4")
                        .bind(v.value.clone())
                        .bind(org)
                        .bind(key(0))
                        .bind(key(1))
                }
                SealedKind::Session | SealedKind::Agent => {
                    let table = if v.kind == SealedKind::Session { "sessions" } else { "agents" };
                    let read = Sql::new(format!("SELECT doc FROM {table} WHERE org_id = $1 AND id = $2"))
                        .bind(org)
                        .bind(key(0));
                    let Some((doc,)) = self.fetch_optional::<(Doc,)>(read).await? else { continue };
                    Sql::new(format!("UPDATE {table} SET doc = $1 WHERE org_id = $2 AND id = $3"))
                        .bind(Doc(with_field(doc.0.as_str(), &v.value)?))
                        .bind(org)
                        .bind(key(0))
                }
                SealedKind::AgentVersion => {
                    let version: i64 = key(1).parse().unwrap_or_default();
                    let read = Sql::new("SELECT doc FROM agent_versions WHERE agent_id = $1 AND version = $2")
                        .bind(key(0))
                        .bind(version);
                    let Some((doc,)) = self.fetch_optional::<(Doc,)>(read).await? else { continue };
                    Sql::new("UPDATE agent_versions SET doc = $1 WHERE agent_id = $2 AND version = $3")
                        .bind(Doc(with_field(doc.0.as_str(), &v.value)?))
                        .bind(key(0))
                        .bind(version)
                }
            };
            then.push(sql);
        }
        // The read caches hold documents with the old values.
        self.sessions.clear();
        self.agents.clear();
        Ok(self.db.transaction(&first, &then).await? > 0)
    }
}
